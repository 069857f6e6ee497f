// The console's own script (served by the platform, no inline script anywhere): the CSRF header on
// every htmx request, live numbers polled only while the page is visible, times in the viewer's
// time zone, copy buttons, and file uploads streamed as the file itself with a progress bar.
(function () {
  'use strict';

  function cookie(name) {
    var parts = document.cookie ? document.cookie.split('; ') : [];
    for (var i = 0; i < parts.length; i++) {
      var eq = parts[i].indexOf('=');
      if (parts[i].slice(0, eq) === name) return decodeURIComponent(parts[i].slice(eq + 1));
    }
    return null;
  }

  // The session's CSRF token (the readable vd_csrf cookie) on every unsafe htmx request.
  document.addEventListener('htmx:configRequest', function (e) {
    var token = cookie('vd_csrf');
    if (token) e.detail.headers['x-vd-csrf'] = token;
  });

  // Times: <time datetime="ISO"> shown in the viewer's own time zone.
  function localTimes(root) {
    var els = (root || document).querySelectorAll('time[datetime]');
    for (var i = 0; i < els.length; i++) {
      var el = els[i];
      var d = new Date(el.getAttribute('datetime'));
      if (isNaN(d.getTime())) continue;
      el.textContent = el.hasAttribute('data-date') ? d.toLocaleDateString() : el.hasAttribute('data-clock') ? hhmm(d) : d.toLocaleString();
      el.title = el.getAttribute('datetime');
    }
    // Charts: a time axis drawn in UTC by the server, shown in the viewer's zone.
    var ticks = (root || document).querySelectorAll('svg text[data-t]');
    for (var j = 0; j < ticks.length; j++) ticks[j].textContent = hhmm(new Date(Number(ticks[j].getAttribute('data-t')) * 1000));
    var axes = (root || document).querySelectorAll('svg text[data-utc-axis]');
    for (var k = 0; k < axes.length; k++) axes[k].textContent = axes[k].textContent.replace('(UTC)', '(your time)');
  }
  function hhmm(d) {
    return d.toLocaleTimeString([], { hour: '2-digit', minute: '2-digit', hour12: false });
  }

  // Live numbers: every [data-poll] element gets an htmx "poll" event each period while the
  // page is visible; hidden, the timer stops; visible again, it polls at once and starts again.
  var timer = null;
  function pollers() {
    return document.querySelectorAll('[data-poll]');
  }
  function tick() {
    var els = pollers();
    // A card with an open confirmation (a Hang up, say) waits: the refresh would close it.
    for (var i = 0; i < els.length; i++) if (!els[i].querySelector('details[open]')) window.htmx.trigger(els[i], 'poll');
  }
  function period() {
    var els = pollers();
    var s = 0;
    for (var i = 0; i < els.length; i++) {
      var v = Number(els[i].getAttribute('data-poll'));
      if (v > 0 && (s === 0 || v < s)) s = v;
    }
    return s;
  }
  function start() {
    stop();
    var s = period();
    if (s > 0 && !document.hidden) timer = setInterval(tick, s * 1000);
  }
  function stop() {
    if (timer !== null) clearInterval(timer);
    timer = null;
  }
  document.addEventListener('visibilitychange', function () {
    if (document.hidden) return stop();
    if (period() > 0) tick();
    start();
  });

  // Copy buttons: <button data-copy="id"> copies the text of the element with that id.
  document.addEventListener('click', function (e) {
    var b = e.target.closest ? e.target.closest('button[data-copy]') : null;
    if (!b) return;
    var src = document.getElementById(b.getAttribute('data-copy'));
    if (!src) return;
    var text = src.textContent;
    var done = function () {
      b.textContent = 'Copied';
    };
    if (navigator.clipboard && window.isSecureContext) navigator.clipboard.writeText(text).then(done, function () {});
    else {
      var r = document.createRange();
      r.selectNodeContents(src);
      var sel = window.getSelection();
      sel.removeAllRanges();
      sel.addRange(r);
      if (document.execCommand('copy')) done();
    }
  });

  // File uploads: <form data-upload data-target="id"> sends the chosen file itself as the body
  // (the import code reads it as it streams in), the other fields as the query, and shows the
  // answer (a server-rendered fragment) in the target.
  document.addEventListener('submit', function (e) {
    var form = e.target;
    if (!form.hasAttribute || !form.hasAttribute('data-upload')) return;
    e.preventDefault();
    var input = form.querySelector('input[type=file]');
    var target = document.getElementById(form.getAttribute('data-target'));
    var bar = form.querySelector('progress');
    var file = input && input.files && input.files[0];
    if (!file) {
      target.textContent = 'Choose a file first.';
      return;
    }
    var query = new URLSearchParams();
    var fields = form.querySelectorAll('select[name], input[name]:not([type=file])');
    for (var i = 0; i < fields.length; i++) query.set(fields[i].name, fields[i].value);
    var xhr = new XMLHttpRequest();
    xhr.open('POST', form.getAttribute('action') + '?' + query.toString());
    xhr.setRequestHeader('content-type', file.type === 'text/plain' ? 'text/plain' : 'text/csv');
    var token = cookie('vd_csrf');
    if (token) xhr.setRequestHeader('x-vd-csrf', token);
    xhr.setRequestHeader('hx-request', 'true');
    if (bar) {
      bar.hidden = false;
      bar.value = 0;
    }
    xhr.upload.addEventListener('progress', function (p) {
      if (bar && p.lengthComputable) bar.value = p.loaded / p.total;
    });
    xhr.addEventListener('load', function () {
      if (bar) bar.hidden = true;
      target.innerHTML = xhr.responseText;
      // What the answer sends along out of band (the past imports, with the new one) replaces
      // the element of the same id, as htmx does for its own requests.
      var oob = target.querySelectorAll('[hx-swap-oob][id]');
      for (var j = 0; j < oob.length; j++) {
        var same = document.querySelectorAll('#' + CSS.escape(oob[j].id));
        var old = null;
        for (var k = 0; k < same.length; k++) if (!target.contains(same[k])) old = same[k];
        oob[j].removeAttribute('hx-swap-oob');
        if (old) old.replaceWith(oob[j]);
        else oob[j].remove();
      }
      window.htmx.process(document.body);
      localTimes(document);
      localTimes(target);
      start();
    });
    xhr.addEventListener('error', function () {
      if (bar) bar.hidden = true;
      target.textContent = 'The upload did not reach the server.';
    });
    xhr.send(file);
  });

  // A refused form comes back with aria-invalid on the fields the server named: the first of them
  // gets the focus (the one that had it went away with the swap), so a keyboard user is at the
  // field to fix, its message read with it (aria-describedby).
  function focusRefused(root) {
    if (!root || !root.querySelector || !root.isConnected) return;
    var active = document.activeElement;
    if (active && active !== document.body && active.isConnected) return;
    var bad = root.matches && root.matches('[aria-invalid="true"]') ? root : root.querySelector('[aria-invalid="true"]');
    if (bad) bad.focus();
  }

  document.addEventListener('htmx:afterSettle', function (e) {
    localTimes(e.target);
    focusRefused(e.target);
    start();
  });
  document.addEventListener('DOMContentLoaded', function () {
    localTimes(document);
    start();
  });
})();

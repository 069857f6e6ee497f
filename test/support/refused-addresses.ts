/** The table of refused customer addresses, shared by the guarded client's suite and the webhook API suite. */
const NUMERIC = /numeric/;
const INTERNAL = /internal/;
const CREDENTIALS = /user name or password/;
const SCHEME = /http or https/;

/**
 * Addresses the guarded client must refuse, each with the words its refusal must hold. Every
 * loopback form carries the receiver's port `P`: a hole in the guard would reach it.
 */
export function refusedForms(P: number): Array<[string, RegExp]> {
  return [
  [`http://127.0.0.1:${P}/`, NUMERIC],
  [`http://2130706433:${P}/`, NUMERIC],
  [`http://0x7f.1:${P}/`, NUMERIC],
  [`http://127.1:${P}/`, NUMERIC],
  [`http://0177.0.0.1:${P}/`, NUMERIC],
  [`http://0x7f000001:${P}/`, NUMERIC],
  [`http://0x7f.0x0.0x0.0x1:${P}/`, NUMERIC],
  [`http://%31%32%37.0.0.1:${P}/`, NUMERIC],
  [`http://127.0.0.1.:${P}/`, NUMERIC],
  [`http://１２７.０.０.１:${P}/`, NUMERIC], // full-width digits fold to ASCII
  [`http:\\\\127.0.0.1:${P}/`, NUMERIC], // backslashes count as slashes in http URLs
  [`http://127.0.0.1:${P}\\@example.com/`, NUMERIC], // the backslash ends the authority
  [`http://[::1]:${P}/`, NUMERIC],
  [`http://[::ffff:127.0.0.1]:${P}/`, NUMERIC],
  [`http://[::ffff:7f00:1]:${P}/`, NUMERIC],
  [`http://[0:0:0:0:0:ffff:127.0.0.1]:${P}/`, NUMERIC],
  [`http://[::7f00:1]:${P}/`, NUMERIC],
  [`http://localhost:${P}/`, INTERNAL],
  [`http://LOCALHOST.:${P}/`, INTERNAL],
  [`HTTP://LocalHost:${P}/`, INTERNAL],
  [`http://foo.localhost:${P}/`, INTERNAL],
  [`http://0.0.0.0:${P}/`, NUMERIC],
  [`http://0:${P}/`, NUMERIC],
  [`http://[::]:${P}/`, NUMERIC],
  ['http://10.0.0.1/', NUMERIC],
  ['http://0x0a.1/', NUMERIC],
  ['http://172.16.0.1/', NUMERIC],
  ['http://192.168.1.1/', NUMERIC],
  ['http://169.254.169.254/latest/meta-data/', NUMERIC],
  ['http://[fe80::1]/', NUMERIC],
  ['http://[fc00::1]/', NUMERIC],
  ['http://100.64.0.1/', NUMERIC],
  ['http://224.0.0.1/', NUMERIC],
  ['http://255.255.255.255/', NUMERIC],
  ['http://8.8.8.8/', NUMERIC],
  ['http://[2001:4860:4860::8888]/', NUMERIC],
  ['http://metadata.google.internal/computeMetadata/v1/', INTERNAL],
  ['http://printer.local/', INTERNAL],
  ['http://intranet/', INTERNAL],
  ['http://router.lan/', INTERNAL],
  ['http://nas.home.arpa/', INTERNAL],
  ['http://1.0.0.127.in-addr.arpa/', INTERNAL],
  ['http://db.corp./', INTERNAL],
  ['http://box.localdomain/', INTERNAL],
  ['http://user:pass@example.com/', CREDENTIALS],
  ['http://user@example.com/', CREDENTIALS],
  [`http://example.com@127.0.0.1:${P}/`, CREDENTIALS],
  ['ftp://example.com/', SCHEME],
  ['file:///etc/passwd', SCHEME],
  ['javascript:alert(1)', SCHEME],
  ['gopher://example.com/', SCHEME],
  ['data:text/plain,hello', SCHEME],
  ['ws://example.com/', SCHEME],
  ['not a url', /valid URL/],
  [`https://example.com/${'a'.repeat(2048)}`, /2048/],
];
}

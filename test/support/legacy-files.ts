/**
 * Legacy files made on the fly for the import tests and benchmarks (never committed): the legacy
 * dialer's list download (tab-delimited, CRLF, a header, the standard column order, newlines in
 * comments written as `!N`, never quoted), comma CSV, and do-not-call text; plus a streamed POST
 * that counts what it sent and can be cut off.
 */
import http from 'node:http';
import type { Session } from './http.ts';

/** The legacy list download's columns, in its standard order (phone_code 11th, phone_number 12th). */
export const LEGACY_COLUMNS = [
  'lead_id', 'entry_date', 'modify_date', 'status', 'user', 'vendor_lead_code', 'source_id', 'list_id', 'gmt_offset_now', 'called_since_last_reset',
  'phone_code', 'phone_number', 'title', 'first_name', 'middle_initial', 'last_name', 'address1', 'address2', 'address3', 'city', 'state', 'province',
  'postal_code', 'country_code', 'gender', 'date_of_birth', 'alt_phone', 'email', 'security_phrase', 'comments', 'called_count', 'last_local_call_time',
  'rank', 'owner', 'entry_list_id',
] as const;

export type LegacyFields = Partial<Record<(typeof LEGACY_COLUMNS)[number], string>>;

/** A valid, distinct US number for each `i` below 8,000,000 (national form, 10 digits). */
export function usNumber(i: number): string {
  const areas = ['415', '212', '312', '617', '206', '303', '512', '404'];
  return `${areas[Math.floor(i / 1_000_000) % areas.length]}${2_000_000 + (i % 1_000_000)}`;
}

/** One row of a legacy list download with realistic filler, `fields` overriding. */
export function legacyRow(i: number, fields: LegacyFields = {}): string {
  const base: LegacyFields = {
    lead_id: String(1000 + i), entry_date: '2024-03-01 09:15:00', modify_date: '2024-03-02 10:00:00', status: 'NEW', user: 'VDAD',
    vendor_lead_code: `V${i}`, source_id: 'SRC', list_id: '1001', gmt_offset_now: '-8.00', called_since_last_reset: 'N', phone_code: '1',
    phone_number: usNumber(i), title: 'Ms', first_name: 'Ada', middle_initial: 'B', last_name: 'Lovelace', address1: '12 Main St', address2: '',
    address3: '', city: 'Springfield', state: 'ca', province: '', postal_code: '94107', country_code: 'USA', gender: 'F', date_of_birth: '1980-02-03',
    alt_phone: '', email: 'ada@example.com', security_phrase: '', comments: 'called twice!Nsaid "call back" later', called_count: '2',
    last_local_call_time: '2024-03-02 10:00:00', rank: '0', owner: '', entry_list_id: '0',
  };
  const all = { ...base, ...fields };
  return LEGACY_COLUMNS.map((c) => all[c] ?? '').join('\t');
}

/** A legacy list download: the header, then `rows`, CRLF line ends. */
export function legacyFile(rows: string[]): string {
  return [LEGACY_COLUMNS.join('\t'), ...rows].join('\r\n') + '\r\n';
}

/** A comma CSV of only phone numbers with a header: `n` rows, numbers from `from`. */
export function phoneCsv(n: number, from = 0): Buffer {
  const parts = ['phone_number\n'];
  for (let i = 0; i < n; i++) parts.push(`${usNumber(from + i)}\n`);
  return Buffer.from(parts.join(''));
}

export type StreamedAnswer = { status: number; text: string; sentAtAnswer: number; finished: boolean };

/**
 * POSTs `body` chunked (no Content-Length) in 64 KiB writes with back-pressure, stopping as soon
 * as an answer arrives; tells how much had been sent by then.
 */
export function streamUpload(base: string, path: string, session: Session, contentType: string, body: Buffer): Promise<StreamedAnswer> {
  const u = new URL(base);
  return new Promise((resolve, reject) => {
    const req = http.request({
      host: u.hostname, port: u.port, path, method: 'POST',
      headers: { 'content-type': contentType, cookie: session.cookie, 'x-vd-csrf': session.csrf },
    });
    let sent = 0;
    let answered = false;
    let finished = false;
    req.on('error', (err) => {
      if (!answered) reject(err);
    });
    req.on('response', (res) => {
      answered = true;
      const sentAtAnswer = sent;
      const done = finished;
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (d: string) => (text += d));
      res.on('end', () => {
        req.destroy();
        resolve({ status: res.statusCode ?? 0, text, sentAtAnswer, finished: done });
      });
    });
    const pump = (): void => {
      while (!answered && sent < body.length) {
        const piece = body.subarray(sent, sent + 64 * 1024);
        sent += piece.length;
        if (!req.write(piece)) {
          req.once('drain', pump);
          return;
        }
      }
      if (!answered && !finished) {
        finished = true;
        req.end();
      }
    };
    pump();
  });
}

/**
 * Sends the headers and the first `sendBytes` of `body` (declaring its whole length, or chunked),
 * then, `holdMs` later, cuts the connection, as a client that goes away mid-upload. Resolves when
 * it has cut it, or when the server answered or went away first.
 */
export function cutOffUpload(base: string, path: string, session: Session, contentType: string, body: Buffer, sendBytes: number, chunked: boolean, holdMs = 300): Promise<void> {
  const u = new URL(base);
  return new Promise((resolve) => {
    const headers: Record<string, string | number> = { 'content-type': contentType, cookie: session.cookie, 'x-vd-csrf': session.csrf };
    if (!chunked) headers['content-length'] = body.length;
    const req = http.request({ host: u.hostname, port: u.port, path, method: 'POST', headers });
    req.on('error', () => resolve());
    req.on('response', () => resolve());
    req.write(body.subarray(0, sendBytes), () => {
      // Let the server read what was sent, then go away without finishing the body.
      const timer = setTimeout(() => {
        req.destroy();
        resolve();
      }, holdMs);
      req.once('close', () => clearTimeout(timer));
    });
  });
}

/**
 * Starts a chunked upload of `body` but for its last bytes and holds it open until `cut()` (a
 * client that is slow to finish); `cut()` closes the connection and waits for it to be closed.
 */
export function heldUpload(base: string, path: string, session: Session, contentType: string, body: Buffer): { cut(): Promise<void> } {
  const u = new URL(base);
  const req = http.request({ host: u.hostname, port: u.port, path, method: 'POST', headers: { 'content-type': contentType, cookie: session.cookie, 'x-vd-csrf': session.csrf } });
  req.on('error', () => {});
  req.write(body.subarray(0, Math.max(0, body.length - 10)));
  return {
    cut() {
      const closed = new Promise<void>((resolve) => req.once('close', () => resolve()));
      req.destroy();
      return closed;
    },
  };
}

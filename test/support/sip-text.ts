/**
 * SIP text for the drachtio stand-in (drachtio-standin.ts), only as much as its exchanges need:
 * a message parsed from and rendered to text, a reply to a request, and the far end's answer SDP.
 */

export type Sip = { startLine: string; headers: Array<[string, string]>; body: string };

export const CRLF = '\r\n';
/** Where the stand-in's far end says it is. */
export const FAR_HOST = '127.0.0.2';
export const FAR_PORT = '5060';

export function sip(startLine: string, headers: Array<[string, string]>, body = ''): Sip {
  return { startLine, headers, body };
}

export function parse(raw: string): Sip {
  const end = raw.indexOf(CRLF + CRLF);
  const head = end === -1 ? raw : raw.slice(0, end);
  const body = end === -1 ? '' : raw.slice(end + 4);
  const [startLine, ...lines] = head.split(CRLF);
  const headers: Array<[string, string]> = [];
  for (const line of lines) {
    const colon = line.indexOf(':');
    if (colon > 0) headers.push([line.slice(0, colon).trim(), line.slice(colon + 1).trim()]);
  }
  return { startLine: startLine ?? '', headers, body };
}

export function render(m: Sip): string {
  return [m.startLine, ...m.headers.map(([k, v]) => `${k}: ${v}`), '', m.body].join(CRLF);
}

export function headerOf(m: Sip, name: string): string {
  return m.headers.find(([k]) => k.toLowerCase() === name)?.[1] ?? '';
}

const REASONS: Record<number, string> = {
  180: 'Ringing', 200: 'OK', 408: 'Request Timeout', 481: 'Call/Transaction Does Not Exist', 486: 'Busy Here', 487: 'Request Terminated',
  503: 'Service Unavailable', 603: 'Decline',
};

export function reply(req: Sip, status: number, toTag: string | null, body: string | null = null): Sip {
  const to = headerOf(req, 'to');
  const headers: Array<[string, string]> = [
    ['Via', headerOf(req, 'via')],
    ['From', headerOf(req, 'from')],
    ['To', toTag && !to.includes('tag=') ? `${to};tag=${toTag}` : to],
    ['Call-ID', headerOf(req, 'call-id')],
    ['CSeq', headerOf(req, 'cseq')],
  ];
  if (status === 200 && req.startLine.startsWith('INVITE')) headers.push(['Contact', `<sip:far@${FAR_HOST}:${FAR_PORT}>`]);
  if (body) headers.push(['Content-Type', 'application/sdp']);
  headers.push(['Content-Length', String(body ? Buffer.byteLength(body) : 0)]);
  return sip(`SIP/2.0 ${status} ${REASONS[status] ?? 'Status'}`, headers, body ?? '');
}

export function answerSdp(): string {
  return ['v=0', `o=- 1 1 IN IP4 ${FAR_HOST}`, 's=far', `c=IN IP4 ${FAR_HOST}`, 't=0 0', 'm=audio 30000 RTP/AVP 0', 'a=rtpmap:0 PCMU/8000', ''].join(CRLF);
}

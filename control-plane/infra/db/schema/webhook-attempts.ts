/** Every attempt of a webhook delivery: time, HTTP status, outcome, answer time, the first bytes. */

export interface WebhookAttemptsTable {
  delivery_id: string;
  n: number;
  at: Date;
  duration_ms: number;
  http_status: number | null;
  /** answered (with http_status), timeout, connection_refused, connection_failed, refused_address, error. */
  outcome: string;
  body_start: string | null;
  message: string | null;
}

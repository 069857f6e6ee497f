/** Live calls and calls placed per company every 10 s (the platform's totals under `*`), kept an hour for the console's charts. */
export interface LiveCallsSamplesTable {
  /** The 10 s boundary the sample was taken on. */
  at: Date;
  /** A company's id, or `*` for the whole platform. */
  tenant_id: string;
  /** Calls up (not ended) at `at`. */
  live: number;
  /** Calls launched in the 10 s before `at` (from `dial_stats`). */
  placed: number;
}

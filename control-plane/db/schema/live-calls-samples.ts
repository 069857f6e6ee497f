/** Live calls per company every 10 s (the platform's total under `*`), kept an hour for the console's charts. */
export interface LiveCallsSamplesTable {
  /** The 10 s boundary the sample was taken on. */
  at: Date;
  /** A company's id, or `*` for the whole platform. */
  tenant_id: string;
  live: number;
}

/**
 * Rows stored in pieces while the file is still being read, inside the import's one transaction:
 * a piece is sent as soon as it is full, and the reader goes on filling the next one while the
 * store writes it, so reading the file (JavaScript) and storing it (Postgres, on the other core)
 * overlap instead of following each other. At most one piece is in flight and one filling, so
 * memory stays flat whatever the file's size; a failed piece fails the next `add` or `finish`,
 * and the import's transaction then rolls back every piece.
 *
 * Also the distinct count of the numbers seen, for the import's result (repeats in the file), kept
 * as one float per number (E.164 allows at most 15 digits, exact in a double): 8 bytes a row
 * instead of a set of strings. A longer number, if the metadata ever calls one valid, is kept as
 * text.
 */

export class Pieces<T> {
  readonly #size: number;
  readonly #send: (rows: T[]) => Promise<void>;
  #rows: T[] = [];
  #inFlight: Promise<void> | null = null;

  /** Pieces of `size` rows, each stored by `send` (one statement on the import's transaction). */
  constructor(size: number, send: (rows: T[]) => Promise<void>) {
    this.#size = size;
    this.#send = send;
  }

  /** Adds a row; a full piece is sent once the one before it is stored (waiting for it if not). */
  async add(row: T): Promise<void> {
    this.#rows.push(row);
    if (this.#rows.length >= this.#size) await this.#sendPiece();
  }

  /** Sends what is left and waits until every piece is stored. */
  async finish(): Promise<void> {
    await this.#sendPiece();
    await this.#settle();
  }

  /** Gives up: drops what is not sent and waits for the piece in flight (the transaction is then rolled back). */
  async abort(): Promise<void> {
    this.#rows = [];
    await this.#settle().catch(() => {});
  }

  async #sendPiece(): Promise<void> {
    await this.#settle();
    if (this.#rows.length === 0) return;
    const rows = this.#rows;
    this.#rows = [];
    const sending = this.#send(rows);
    // Its failure is thrown by the next add or finish; until then it must not count as unhandled.
    sending.catch(() => {});
    this.#inFlight = sending;
  }

  async #settle(): Promise<void> {
    const inFlight = this.#inFlight;
    this.#inFlight = null;
    await inFlight;
  }
}

/** The distinct count of E.164 numbers, seen one by one. */
export class DistinctNumbers {
  #values = new Float64Array(1024);
  #count = 0;
  readonly #long = new Set<string>();

  add(e164: string): void {
    if (e164.length > 16) {
      this.#long.add(e164);
      return;
    }
    if (this.#count === this.#values.length) {
      const grown = new Float64Array(this.#values.length * 2);
      grown.set(this.#values);
      this.#values = grown;
    }
    this.#values[this.#count++] = Number(e164.slice(1));
  }

  /** How many different numbers were seen. */
  distinct(): number {
    const seen = this.#values.subarray(0, this.#count).sort();
    let distinct = this.#long.size;
    for (let i = 0; i < seen.length; i++) if (i === 0 || seen[i] !== seen[i - 1]) distinct++;
    return distinct;
  }
}

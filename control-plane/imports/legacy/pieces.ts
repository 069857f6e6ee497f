import { ignore } from '../../../shared/errors.ts';
/**
 * An import's rows sent to the store in pieces while the file is still being read, inside the
 * import's one transaction (they go to its staging table): a piece is sent as soon as it is full
 * and the reader goes on filling the next one while the store takes it, so reading the file
 * (JavaScript) and copying it (Postgres, on the other core) overlap. At most `depth` pieces wait
 * and one fills, so memory stays flat whatever the file's size; a failed piece fails a later
 * `add` or `finish` (and the pieces after it are not sent), and the transaction then rolls back.

 */

export class Pieces<T> {
  readonly #size: number;
  readonly #depth: number;
  readonly #send: (rows: T[]) => Promise<void>;
  #rows: T[] = [];
  /** The pieces sent and not yet stored, oldest first; each is sent once the one before it is stored. */
  #queue: Array<Promise<void>> = [];
  #last: Promise<void> = Promise.resolve();

  /**
   * Pieces of `size` rows, each stored by `send` (statements on the import's transaction, one
   * piece at a time); up to `depth` full pieces wait for the store before `add` waits too, so a
   * short stall on either side does not stop the other.
   */
  constructor(size: number, send: (rows: T[]) => Promise<void>, depth = 4) {
    this.#size = size;
    this.#send = send;
    this.#depth = depth;
  }

  /** Adds a row; a full piece is queued for the store (waiting first if `depth` pieces already are). */
  async add(row: T): Promise<void> {
    this.#rows.push(row);
    if (this.#rows.length >= this.#size) await this.#queuePiece();
  }

  /** Sends what is left and waits until every piece is stored. */
  async finish(): Promise<void> {
    await this.#queuePiece();
    while (this.#queue.length) await this.#queue.shift();
  }

  /** Gives up: drops what is not sent and waits for the pieces under way (the transaction is then rolled back). */
  async abort(): Promise<void> {
    this.#rows = [];
    await this.#last.catch(ignore('giving up: the transaction is rolled back; a piece that failed is why'));
    this.#queue = [];
  }

  async #queuePiece(): Promise<void> {
    // A failed piece is thrown here (by the oldest one) or by finish.
    while (this.#queue.length >= this.#depth) await this.#queue.shift();
    if (this.#rows.length === 0) return;
    const rows = this.#rows;
    this.#rows = [];
    // After the one before it, and not at all once one has failed.
    const sending = this.#last.then(() => this.#send(rows));
    // Its failure is thrown by a later add or finish; until then it must not count as unhandled.
    sending.catch(ignore('thrown by a later add or finish; until then it must not count as unhandled'));
    this.#last = sending;
    this.#queue.push(sending);
  }
}

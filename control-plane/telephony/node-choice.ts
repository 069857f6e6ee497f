/**
 * The choice of a media node for one new call: the power of two choices. Among the nodes with
 * free room, draw two at random (two different ones when there are two or more) and take the
 * less loaded. Load is the share of capacity in use (`live / capacity`); on equal shares the one
 * with more free slots wins, then the first drawn. Draws are weighted by capacity, so a node twice
 * as big is drawn twice as often and nodes of different sizes fill at about the same pace (with
 * even draws, small nodes would be drawn, and filled, ahead of their share). Two random draws
 * instead of "the least loaded of all" keep many dialers that decide at once, each from a
 * slightly old view, from all piling onto the same node.
 *
 * Pure: the caller gives the nodes (already limited to those that are online and accepting) and
 * the random function.
 */

/** A node as the choice sees it: its capacity and the calls it carries (or has been promised). */
export type NodeLoad = {
  node_id: string;
  capacity: number;
  live: number;
  /** A draining node takes no call; left out whatever its room. */
  draining?: boolean;
};

/** Free slots of a node (0 when full or draining). */
export function freeRoom(n: NodeLoad): number {
  if (n.draining) return 0;
  return Math.max(0, Math.floor(n.capacity) - Math.max(0, Math.ceil(n.live)));
}

/** The node for the next call, or null when no node has room. `random` returns [0, 1). */
export function chooseNode(nodes: readonly NodeLoad[], random: () => number): string | null {
  const open = nodes.filter((n) => freeRoom(n) > 0);
  if (open.length === 0) return null;
  if (open.length === 1) return open[0].node_id;
  const i = draw(open, -1, random);
  const j = draw(open, i, random);
  return lessLoaded(open[i], open[j]).node_id;
}

/** One node's index, drawn with a chance in proportion to its capacity, leaving out `skip`. */
function draw(nodes: readonly NodeLoad[], skip: number, random: () => number): number {
  let total = 0;
  for (let k = 0; k < nodes.length; k++) if (k !== skip) total += nodes[k].capacity;
  let at = random() * total;
  let last = -1;
  for (let k = 0; k < nodes.length; k++) {
    if (k === skip) continue;
    last = k;
    at -= nodes[k].capacity;
    if (at < 0) return k;
  }
  return last;
}

function lessLoaded(a: NodeLoad, b: NodeLoad): NodeLoad {
  const la = a.live / a.capacity;
  const lb = b.live / b.capacity;
  if (la !== lb) return la < lb ? a : b;
  return freeRoom(b) > freeRoom(a) ? b : a;
}

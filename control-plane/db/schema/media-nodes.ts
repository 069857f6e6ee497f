/** Media nodes: filled in by the node actor's work (issue 4). */
export interface MediaNodesTable {
  node_id: string;
}

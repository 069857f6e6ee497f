/** How the media agent's parts log: one function, given by whoever runs the agent. */
export type AgentLog = (level: 'debug' | 'info' | 'warn' | 'error', msg: string, fields?: Record<string, unknown>) => void;

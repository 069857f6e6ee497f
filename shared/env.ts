/**
 * Reading settings from the environment with a zod object schema: only the schema's own keys are
 * read, an empty value counts as unset, and every bad value is named in one message. The control
 * plane's and the media agent's settings both go through here.
 */
import type { z } from 'zod';

/** The parsed settings, or the list of `VARIABLE: problem` lines when any value is bad. */
export function parseEnv<S extends z.ZodType & { shape?: Record<string, unknown> }>(
  schema: S,
  env: Record<string, string | undefined>,
): { ok: true; value: z.output<S> } | { ok: false; problems: string[] } {
  const picked: Record<string, string> = {};
  for (const key of Object.keys(schema.shape ?? {})) {
    const v = env[key];
    if (v !== undefined && v !== '') picked[key] = v;
  }
  const parsed = schema.safeParse(picked);
  if (parsed.success) return { ok: true, value: parsed.data };
  return { ok: false, problems: parsed.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`) };
}

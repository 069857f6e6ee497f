/**
 * The body of an AI upstream change: the API route (`http/routes/platform/ai.ts`) checks a request
 * with it and the console page its form; both import it from here, so no console page imports a
 * route module.
 */
import { z } from '@hono/zod-openapi';
import { AI_PURPOSES, MAX_API_KEY, MAX_BASE_URL, MAX_MODEL } from '../../control-plane/ai/providers.ts';

/** An AI purpose. */
export const Purpose = z.enum(AI_PURPOSES).openapi({ description: 'bot (the voice bot of the calls), qa (the QA Bot), transcription.' });

/** One purpose's settings (also the console's form). */
export const AiChange = z.object({
  purpose: Purpose,
  base_url: z.string().trim().min(1).max(MAX_BASE_URL).openapi({ description: 'http:// or https://, no user name, password, query or fragment.' }),
  model: z.string().trim().min(1).max(MAX_MODEL),
  api_key: z.string().min(1).max(MAX_API_KEY).nullable().optional().openapi({ description: 'Absent: the stored key stays. null: the stored key is removed.' }),
});

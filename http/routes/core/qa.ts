/**
 * QA reviews under `/api/core/v1/qa/reviews`: the company reads its reviews (session or a key with
 * `read`), and an owner or admin re-scores a recording (a new review superseding the last, counted
 * again).
 */
import { z } from '@hono/zod-openapi';
import { findReview, listReviews, rescore } from '../../../control-plane/qa/reviews.ts';
import { readScorecard } from '../../../control-plane/qa/scorecard.ts';
import { companyReaders, companyWriters, tenantOf } from '../../middleware/guards.ts';
import { ApiRoutes } from '../../openapi/route.ts';
import { Cursor, idParam, json, optionalQueryParam, pageOf, pathOf, record } from '../../openapi/schemas.ts';

const Figure = z.string().nullable().openapi({ description: 'A decimal string with 2 places; null until scored.', example: '87.50' });

const Review = record('QaReview', {
  id: z.string(),
  call_id: z.string().nullable(),
  recording_id: z.string(),
  scorecard_version: z.number().int(),
  scorer: z.enum(['ai', 'builtin']).nullable(),
  model: z.string().nullable(),
  status: z.enum(['queued', 'scoring', 'scored', 'failed']),
  score: Figure,
  potential_score: Figure,
  percentage: Figure.openapi({ description: 'score / potential_score × 100, rounded half away from zero to 2 places; null until scored or when no criterion applied.' }),
  critical_failed: z.boolean().nullable(),
  answers: z
    .array(z.object({ criterion: z.string(), points: z.number().int(), max_points: z.number().int(), not_applicable: z.boolean(), justification: z.string() }))
    .nullable(),
  supersedes: z.string().nullable(),
  created_at: z.string(),
  scored_at: z.string().nullable(),
  attempts: z.number().int(),
  error: z.string().nullable(),
});

const Scorecard = record('QaScorecard', {
  version: z.number().int(),
  criteria: z.array(z.object({ key: z.string(), title: z.string(), description: z.string(), weight: z.number().int(), critical: z.boolean(), allow_na: z.boolean() })),
});

const Query = z.object({
  call_id: optionalQueryParam(z.string().max(64)).openapi({ description: "Only this call's reviews." }),
  recording_id: optionalQueryParam(z.string().max(64)).openapi({ description: "Only this recording's reviews." }),
  cursor: Cursor,
});

export const qaRoutes = new ApiRoutes('QA')
  .add(
    {
      method: 'get',
      path: '/qa/scorecard',
      guard: companyReaders,
      summary: 'The QA scorecard',
      description: "The company's current scorecard: its criteria with their weights (most points), whether each is critical (0 points fails the call) and whether it may be answered not applicable. New reviews are scored against it.",
      answers: { 200: json('The scorecard.', Scorecard) },
    },
    async (c) => c.json(await readScorecard(c.get('services').store.db, tenantOf(c.get('principal')))),
  )
  .add(
    {
      method: 'get',
      path: '/qa/reviews',
      guard: companyReaders,
      summary: 'QA reviews',
      description: "The company's reviews in creation order, 50 a page; a call or recording of another company is 404.",
      query: Query,
      answers: { 200: json('A page of reviews.', pageOf(Review)) },
    },
    async (c, { query }) => c.json(await listReviews(c.get('services').store, tenantOf(c.get('principal')), query)),
  )
  .add(
    {
      method: 'get',
      path: '/qa/reviews/{id}',
      guard: companyReaders,
      summary: 'A QA review',
      params: pathOf({ id: idParam('The review id (rev_…).') }),
      answers: { 200: json('The review.', Review) },
    },
    async (c, { params }) => c.json(await findReview(c.get('services').store, tenantOf(c.get('principal')), params.id)),
  )
  .add(
    {
      method: 'post',
      path: '/qa/reviews',
      guard: companyWriters,
      summary: 'Re-score a recording',
      description: "A new review of the company's stored recording that supersedes its latest one; it is scored in the background and counted again (a qa_review usage item).",
      body: z.object({ recording_id: z.string().min(1).max(64) }),
      answers: { 202: json('The new review, queued.', Review) },
      errors: { 404: 'No such recording for this company.', 409: 'The recording is not stored, or its latest review is still queued or being scored.' },
    },
    async (c, { body }) => {
      const services = c.get('services');
      const review = await rescore(services.store, tenantOf(c.get('principal')), body.recording_id);
      services.qa.wake();
      return c.json(review, 202);
    },
  );

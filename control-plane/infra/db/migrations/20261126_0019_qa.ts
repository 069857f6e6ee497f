/**
 * The QA Bot (issue 14): each company's scorecards, numbered versions of its criteria (version 1
 * is the platform's default, written the first time one of its recordings is queued), and the
 * reviews, one per stored recording plus one per re-score (which supersedes the review before it).
 * Points and percentages are NUMERIC; a review is taken by one instance at a time under a lease.
 */
import { sql, type Kysely } from 'kysely';

export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable('qa_scorecards')
    .addColumn('tenant_id', 'text', (c) => c.notNull().references('companies.id'))
    .addColumn('version', 'integer', (c) => c.notNull())
    // [{key, title, description, weight, critical, allow_na}]: see control-plane/qa/scorecard.ts.
    .addColumn('criteria', 'jsonb', (c) => c.notNull())
    .addColumn('created_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .addPrimaryKeyConstraint('qa_scorecards_pk', ['tenant_id', 'version'])
    .addCheckConstraint('qa_scorecards_version', sql`version >= 1`)
    .execute();
  await db.schema
    .createTable('qa_reviews')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('tenant_id', 'text', (c) => c.notNull().references('companies.id'))
    // An imported recording has no call.
    .addColumn('call_id', 'text')
    .addColumn('campaign_id', 'text')
    .addColumn('recording_id', 'text', (c) => c.notNull())
    .addColumn('scorecard_version', 'integer', (c) => c.notNull())
    // 'ai' or 'builtin'; null until it is scored.
    .addColumn('scorer', 'text')
    .addColumn('model', 'text')
    .addColumn('status', 'text', (c) => c.notNull().defaultTo('queued'))
    .addColumn('score', sql`numeric(12,2)`)
    .addColumn('potential_score', sql`numeric(12,2)`)
    // score / potential × 100, rounded half away from zero to 2 places; null when no criterion applied.
    .addColumn('percentage', sql`numeric(5,2)`)
    .addColumn('critical_failed', 'boolean')
    // [{criterion, points, max_points, not_applicable, justification}]
    .addColumn('answers', 'jsonb')
    // The review this one replaces (a re-score); null for the recording's first review.
    .addColumn('supersedes', 'text', (c) => c.references('qa_reviews.id'))
    .addColumn('created_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .addColumn('scored_at', 'timestamptz')
    // Times an instance has taken it; at the limit it ends as 'failed' with its last error.
    .addColumn('attempts', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('error', 'text')
    .addColumn('lease_owner', 'text')
    .addColumn('lease_until', 'timestamptz')
    // Not taken again before this (a failed attempt waits before the next).
    .addColumn('not_before', 'timestamptz')
    .addCheckConstraint('qa_reviews_status', sql`status in ('queued','scoring','scored','failed')`)
    .addCheckConstraint('qa_reviews_scorer', sql`scorer is null or scorer in ('ai','builtin')`)
    .addCheckConstraint('qa_reviews_scored', sql`status <> 'scored' or (score is not null and potential_score is not null and critical_failed is not null and answers is not null and scorer is not null)`)
    .execute();
  // Every stored recording is queued exactly once: its first review is the one without `supersedes`.
  await sql`create unique index qa_reviews_first on qa_reviews (recording_id) where supersedes is null`.execute(db);
  // A review is superseded at most once: re-scores form one chain.
  await sql`create unique index qa_reviews_supersedes on qa_reviews (supersedes) where supersedes is not null`.execute(db);
  await sql`create index qa_reviews_open on qa_reviews (created_at) where status in ('queued','scoring')`.execute(db);
  await db.schema.createIndex('qa_reviews_tenant').on('qa_reviews').columns(['tenant_id', 'id']).execute();
  await db.schema.createIndex('qa_reviews_call').on('qa_reviews').columns(['call_id']).execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropTable('qa_reviews').ifExists().execute();
  await db.schema.dropTable('qa_scorecards').ifExists().execute();
}

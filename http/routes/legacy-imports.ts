/**
 * The legacy imports under `/api/integrations/v1/connectors/{id}` (INTERFACE.md, Legacy imports):
 * a lead file into a list and a do-not-call file, posted by a company owner's or admin's session
 * with CSRF (API keys: 403), and the connection's past imports. The two file routes read their
 * body as it streams in, under their own limits (50 MB counted as it arrives); the general body
 * limit does not read them first (`streamedBody`, used by `app.ts`).
 */
import { z } from '@hono/zod-openapi';
import { importDnc, importLeads, listImports } from '../../control-plane/imports/legacy/imports.ts';
import { companyMembers, companyWriters, sessionOf, tenantOf } from '../middleware/guards.ts';
import { ApiRoutes } from '../openapi/route.ts';
import { Cursor, idParam, json, pageOf, pathOf, queryParam, record } from '../openapi/schemas.ts';
import { importDeps, upload } from '../common/request-deps.ts';

/** The paths whose bodies the handlers stream themselves (for the general body limit to pass by). */
export function streamedBody(path: string): boolean {
  return /^\/api\/integrations\/v1\/connectors\/[^/]+\/legacy\/import-(leads|dnc)$/.test(path);
}

/** The body as it arrives, and its declared length. */

const ConnectorId = pathOf({ id: idParam('The legacy connection id (con_…).') });
const ListQuery = z.object({ list_id: queryParam(z.string().min(1)).openapi({ description: 'The list the leads go into (lst_…).' }) });
const RejectedRow = z.object({ row: z.number(), reason: z.string() });
const Encoding = z.enum(['utf-8', 'windows-1252']).openapi({ description: 'How the bytes were read: UTF-8, or Windows-1252 from the first byte sequence that is not UTF-8.' });
const LeadImportResult = record('LeadImportResult', {
  import_id: z.string(),
  rows: z.number(),
  forwarded: z.number(),
  rejected: z.number(),
  rejected_rows: z.array(RejectedRow),
  warnings: z.number().openapi({ description: 'Rows taken with a field left empty: a date_of_birth that is not a date.' }),
  encoding: Encoding,
  core: z.object({ created: z.number(), duplicates: z.number(), unchanged: z.number(), check_id: z.string() }),
});
const DncImportResult = record('DncImportResult', {
  import_id: z.string(),
  lines: z.number(),
  accepted: z.number(),
  added: z.number(),
  rejected: z.number(),
  rejected_rows: z.array(RejectedRow.extend({ number: z.string() })),
  encoding: Encoding,
});
const Import = record('Import', {
  id: z.string(),
  kind: z.enum(['leads', 'dnc']),
  list_id: z.string().nullable(),
  status: z.enum(['done', 'failed']),
  result: z.looseObject({}).nullable(),
  error: z.object({ code: z.string(), message: z.string() }).nullable(),
});

export const legacyImportRoutes = new ApiRoutes('Legacy imports')
  .add(
    {
      method: 'post',
      path: '/{id}/legacy/import-leads',
      guard: companyWriters,
      summary: 'Import a legacy lead file into a list',
      description:
        'The body is the file: comma CSV (RFC 4180 quoting; a quote inside a field that did not start with one is text) or the legacy list download (tab-delimited; the delimiter is taken from the first line), UTF-8 or Windows-1252 (`encoding` says which). ' +
        'A row that cannot be read (a quote never closed, a NUL byte) is refused as a row. ' +
        'A first row naming a phone_number column is a header; without one the legacy standard column order applies. Up to 50 MB and 200,000 data rows; ' +
        'the whole file is stored or nothing is. The people arrive unchecked; `core.check_id` is their list check.',
      params: ConnectorId,
      query: ListQuery,
      fileBody: { contentTypes: ['text/csv', 'text/tab-separated-values', 'text/plain'], description: 'The lead file.' },
      answers: { 200: json('The lead import result.', LeadImportResult) },
      errors: {
        413: 'The file is over 50 MB (counted as it arrives; nothing is stored).',
        422: 'The file is empty (no data row: no import record), has more than 200,000 data rows, no row with a valid phone number, or a row longer than 1,000,000 characters; nothing is stored.',
        429: 'Too many imports are running on this instance; Retry-After gives the seconds to wait.',
      },
    },
    async (c, { params, query }) => {
      const p = sessionOf(c.get('principal'));
      const result = await importLeads(importDeps(c), { tenantId: tenantOf(p), connectorId: params.id, userId: p.userId, listId: query.list_id, ...upload(c) });
      c.get('log').info({ import_id: result.import_id, connector_id: params.id, list_id: query.list_id, rows: result.rows, created: result.core.created }, 'lead file imported');
      return c.json(result);
    },
  )
  .add(
    {
      method: 'post',
      path: '/{id}/legacy/import-dnc',
      guard: companyWriters,
      summary: 'Import a legacy do-not-call file',
      description:
        "Plain text (UTF-8 or Windows-1252: `encoding` says which), one number per line; blank and # lines skipped, a first line phone_number is a header, text after , | ; or a tab ignored, a line with a NUL byte refused. The numbers join the company's " +
        'do-not-call list with the source legacy_import (numbers already on it stay as they were). Up to 50 MB and 1,000,000 lines; the whole file is stored or nothing is. ' +
        'One vd.compliance.dnc_imported event per file.',
      params: ConnectorId,
      fileBody: { contentTypes: ['text/plain'], description: 'The do-not-call file.' },
      answers: { 200: json('The do-not-call import result.', DncImportResult) },
      errors: {
        422: 'The file is over 50 MB or 1,000,000 lines, or holds no number (empty: no import record); nothing is stored.',
        429: 'Too many imports are running on this instance; Retry-After gives the seconds to wait.',
      },
    },
    async (c, { params }) => {
      const p = sessionOf(c.get('principal'));
      const result = await importDnc(importDeps(c), { tenantId: tenantOf(p), connectorId: params.id, userId: p.userId, ...upload(c) });
      c.get('log').info({ import_id: result.import_id, connector_id: params.id, lines: result.lines, accepted: result.accepted }, 'do-not-call file imported');
      return c.json(result);
    },
  )
  .add(
    {
      method: 'get',
      path: '/{id}/imports',
      guard: companyMembers,
      summary: "A legacy connection's past imports",
      description: 'Each import with its result (or why it failed), newest first.',
      params: ConnectorId,
      query: z.object({ cursor: Cursor }),
      answers: { 200: json('Imports, newest first.', pageOf(Import)) },
    },
    async (c, { params, query }) => c.json(await listImports(c.get('services').store, tenantOf(c.get('principal')), params.id, query.cursor)),
  );

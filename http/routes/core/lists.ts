/** Lists and people under `/api/core/v1`: `/lists`, `/lists/{id}/people`, `/people/{id}`. */
import { z } from '@hono/zod-openapi';
import { createList, findList, listLists } from '../../../control-plane/core/lists.ts';
import { addPeople, findPerson, listPeople } from '../../../control-plane/core/people.ts';
import { companyReaders, companyWriters, tenantOf } from '../../middleware/guards.ts';
import { ApiRoutes } from '../../openapi/route.ts';
import { Cursor, idParam, json, pageOf, pathOf, record } from '../../openapi/schemas.ts';
import { NewList } from '../../schemas/lists.ts';

/** Each element is checked on its own by the list import, so one bad person is listed instead of failing the rest. */
const NewPeople = z.array(z.unknown()).openapi({
  description:
    'People: `{phone_number, first_name?, last_name?, state?, postal_code?, timezone?, …}` each; up to 10,000 a request. `timezone` is an IANA name (America/Chicago): one this platform does not know fails the whole request (422 naming it).',
});

const List = record('List', { id: z.string(), name: z.string(), people: z.number(), created_at: z.string() });
const Person = record('Person', {
  id: z.string(),
  list_id: z.string(),
  phone_number: z.string(),
  check: z.enum(['unchecked', 'callable', 'rejected']),
  check_reason: z.string().nullable().openapi({ description: '`invalid_number`, `dnc` or `unknown_timezone` (no zone could be told from the timezone, ZIP, state or number).' }),
  line_type: z.string().nullable(),
  timezone: z.string().nullable().openapi({ description: 'The IANA zone given for the person, as given.' }),
  timezone_used: z.array(z.string()).nullable().openapi({ description: 'The IANA zones the check resolved (several where the source spans more than one: the window must be open in each); null until checked.' }),
  next_call_at: z.string().nullable().openapi({ description: "When the legal calling window of the person's region next opens in all of their zones, at or after their next attempt; null when nobody will call them (not callable, done, closed, or in a call)." }),
});
const AddResult = z.looseObject({ added: z.number(), skipped_duplicates: z.number(), rejected: z.number(), warnings: z.number().openapi({ description: 'People added with a field left empty: a date_of_birth that is not a date.' }), check_id: z.string() });
const Check = record('ListCheck', {
  id: z.string(),
  list_id: z.string(),
  status: z.enum(['queued', 'running', 'done', 'failed']),
  checked: z.number(),
  callable: z.number(),
  rejected: z.number(),
  started_at: z.string().nullable(),
  finished_at: z.string().nullable(),
});
const CheckId = pathOf({ id: idParam('The list id (lst_…).'), check_id: idParam('The check id (chk_…).') });
const ListId = pathOf({ id: idParam('The list id (lst_…).') });
const PersonId = pathOf({ id: idParam('The person id (per_…).') });
const Paging = z.object({ cursor: Cursor });

export const listRoutes = new ApiRoutes('Lists and people')
  .add({ method: 'get', path: '/lists', guard: companyReaders, summary: "The company's lists", query: Paging, answers: { 200: json('A page of lists.', pageOf(List)) } }, async (c, { query }) =>
    c.json(await listLists(c.get('services').store, tenantOf(c.get('principal')), query.cursor)),
  )
  .add({ method: 'post', path: '/lists', guard: companyWriters, summary: 'Create a list', body: NewList, answers: { 201: json('The new list.', List) } }, async (c, { body }) =>
    c.json(await createList(c.get('services').store, tenantOf(c.get('principal')), body.name), 201),
  )
  .add({ method: 'get', path: '/lists/{id}', guard: companyReaders, summary: 'One list', params: ListId, answers: { 200: json('The list.', List) } }, async (c, { params }) =>
    c.json(await findList(c.get('services').store, tenantOf(c.get('principal')), params.id)),
  )
  .add(
    { method: 'get', path: '/lists/{id}/people', guard: companyReaders, summary: 'The people of a list', params: ListId, query: Paging, answers: { 200: json('A page of people.', pageOf(Person)) } },
    async (c, { params, query }) => c.json(await listPeople(c.get('services').store, tenantOf(c.get('principal')), params.id, query.cursor, c.get('services').clock.now())),
  )
  .add(
    {
      method: 'post',
      path: '/lists/{id}/people',
      guard: companyWriters,
      summary: 'Add people to a list',
      description: 'Repeated numbers are skipped and numbers already in the list left unchanged; a person without a valid number is refused by its index.',
      params: ListId,
      body: NewPeople,
      answers: { 200: json('What was added, skipped and refused.', AddResult) },
    },
    async (c, { params, body }) => c.json(await addPeople(c.get('services'), tenantOf(c.get('principal')), params.id, body)),
  )
  .add(
    {
      method: 'post',
      path: '/lists/{id}/check',
      guard: companyWriters,
      summary: 'Check every person of a list again',
      description: 'Each number is checked with the full phone metadata and against the do-not-call list; runs in the background.',
      params: ListId,
      answers: { 202: json('The check, queued.', z.object({ check: Check })) },
    },
    async (c, { params }) => c.json({ check: await c.get('services').checks.recheck(tenantOf(c.get('principal')), params.id) }, 202),
  )
  .add({ method: 'get', path: '/lists/{id}/checks/{check_id}', guard: companyReaders, summary: "A list check and its progress", params: CheckId, answers: { 200: json('The check.', Check) } }, async (c, { params }) =>
    c.json(await c.get('services').checks.find(tenantOf(c.get('principal')), params.id, params.check_id)),
  )
  .add({ method: 'get', path: '/people/{id}', guard: companyReaders, summary: 'One person', params: PersonId, answers: { 200: json('The person.', Person) } }, async (c, { params }) =>
    c.json(await findPerson(c.get('services').store, tenantOf(c.get('principal')), params.id, c.get('services').clock.now())),
  );

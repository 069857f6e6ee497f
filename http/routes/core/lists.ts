/** Lists and people under `/api/core/v1`: `/lists`, `/lists/{id}/people`, `/people/{id}`. */
import { Hono } from 'hono';
import { z } from 'zod';
import { createList, findList, listLists } from '../../../control-plane/core/lists.ts';
import { addPeople, findPerson, listPeople } from '../../../control-plane/core/people.ts';
import type { AppEnv } from '../../env.ts';
import { tenantOf } from '../../middleware/auth.ts';
import { readJson } from '../../middleware/body.ts';
import { readers, writers } from './access.ts';

const NewList = z.object({ name: z.string().trim().min(1).max(200) });

export const listRoutes = new Hono<AppEnv>()
  .get('/lists', readers, async (c) => c.json(await listLists(c.get('services').store, tenantOf(c.get('principal')), c.req.query('cursor'))))
  .post('/lists', writers, async (c) => {
    const { name } = readJson(c, NewList);
    return c.json(await createList(c.get('services').store, tenantOf(c.get('principal')), name), 201);
  })
  .get('/lists/:id', readers, async (c) => c.json(await findList(c.get('services').store, tenantOf(c.get('principal')), c.req.param('id'))))
  .get('/lists/:id/people', readers, async (c) =>
    c.json(await listPeople(c.get('services').store, tenantOf(c.get('principal')), c.req.param('id'), c.req.query('cursor'))),
  )
  .post('/lists/:id/people', writers, async (c) => {
    // Each element is checked on its own, so one bad person is listed instead of failing the rest.
    const people = readJson(c, z.array(z.unknown()));
    return c.json(await addPeople(c.get('services').store, tenantOf(c.get('principal')), c.req.param('id'), people));
  })
  .get('/people/:id', readers, async (c) => c.json(await findPerson(c.get('services').store, tenantOf(c.get('principal')), c.req.param('id'))));

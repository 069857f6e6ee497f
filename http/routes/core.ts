/** Company side of core under `/api/core/v1`: lists and people, and campaigns. */
import { Hono } from 'hono';
import type { AppEnv } from '../env.ts';
import { campaignRoutes } from './core/campaigns.ts';
import { listRoutes } from './core/lists.ts';

export const coreRoutes = new Hono<AppEnv>().route('/', listRoutes).route('/campaigns', campaignRoutes);

/** Who may call core: any company user and keys with `read` may read; owners and admins write. */
import { allow } from '../../middleware/auth.ts';

export const readers = allow({ key: 'read', session: 'company' });
export const writers = allow({ session: 'company', roles: ['owner', 'admin'] });

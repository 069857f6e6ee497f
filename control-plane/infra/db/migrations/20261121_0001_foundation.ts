/** Foundation tables: companies (minimal), operators, company users, sessions, keys, idempotency. */
import { sql, type Kysely } from 'kysely';

export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable('companies')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('name', 'text', (c) => c.notNull())
    .addColumn('slug', 'text', (c) => c.notNull().unique())
    .addColumn('notes', 'text', (c) => c.notNull().defaultTo(''))
    .addColumn('parent_id', 'text', (c) => c.references('companies.id'))
    .addColumn('status', 'text', (c) => c.notNull().defaultTo('on'))
    .addColumn('plan', 'text', (c) => c.notNull())
    .addColumn('created_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .addColumn('updated_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .addCheckConstraint('companies_status', sql`status in ('on','suspended','closing')`)
    .addCheckConstraint('companies_plan', sql`plan in ('trial','standard','enterprise')`)
    .execute();

  await db.schema
    .createTable('registered_emails')
    .addColumn('email', 'text', (c) => c.primaryKey())
    .addColumn('user_kind', 'text', (c) => c.notNull())
    .addColumn('user_id', 'text', (c) => c.notNull())
    .execute();

  await db.schema
    .createTable('operators')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('email', 'text', (c) => c.notNull().unique().references('registered_emails.email'))
    .addColumn('name', 'text', (c) => c.notNull())
    .addColumn('password_hash', 'text', (c) => c.notNull())
    .addColumn('roles', sql`text[]`, (c) => c.notNull())
    .addColumn('must_change_password', 'boolean', (c) => c.notNull())
    .addColumn('created_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .execute();

  await db.schema
    .createTable('company_users')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('tenant_id', 'text', (c) => c.notNull().references('companies.id'))
    .addColumn('email', 'text', (c) => c.notNull().unique().references('registered_emails.email'))
    .addColumn('name', 'text', (c) => c.notNull())
    .addColumn('password_hash', 'text', (c) => c.notNull())
    .addColumn('roles', sql`text[]`, (c) => c.notNull())
    .addColumn('must_change_password', 'boolean', (c) => c.notNull())
    .addColumn('created_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .execute();
  await db.schema.createIndex('company_users_tenant').on('company_users').column('tenant_id').execute();

  await db.schema
    .createTable('sessions')
    .addColumn('token_hash', 'text', (c) => c.primaryKey())
    .addColumn('id', 'text', (c) => c.notNull().unique())
    .addColumn('user_kind', 'text', (c) => c.notNull())
    .addColumn('user_id', 'text', (c) => c.notNull())
    .addColumn('tenant_id', 'text', (c) => c.references('companies.id'))
    .addColumn('created_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .addColumn('expires_at', 'timestamptz', (c) => c.notNull())
    .addColumn('ended_at', 'timestamptz')
    .execute();
  await db.schema.createIndex('sessions_user').on('sessions').columns(['user_id']).execute();
  await db.schema.createIndex('sessions_tenant').on('sessions').columns(['tenant_id']).execute();

  await db.schema
    .createTable('api_keys')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('tenant_id', 'text', (c) => c.notNull().references('companies.id'))
    .addColumn('name', 'text', (c) => c.notNull())
    .addColumn('scopes', sql`text[]`, (c) => c.notNull())
    .addColumn('prefix', 'text', (c) => c.notNull())
    .addColumn('secret_hash', 'text', (c) => c.notNull().unique())
    .addColumn('created_by', 'text', (c) => c.notNull())
    .addColumn('created_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .addColumn('revoked_at', 'timestamptz')
    .execute();
  await db.schema.createIndex('api_keys_tenant').on('api_keys').column('tenant_id').execute();

  await db.schema
    .createTable('idempotency_records')
    .addColumn('scope', 'text', (c) => c.notNull())
    .addColumn('key', 'text', (c) => c.notNull())
    .addColumn('request_hash', 'text', (c) => c.notNull())
    .addColumn('state', 'text', (c) => c.notNull())
    .addColumn('status', 'integer')
    .addColumn('body', 'text')
    .addColumn('content_type', 'text')
    .addColumn('created_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .addColumn('locked_until', 'timestamptz', (c) => c.notNull())
    .addColumn('expires_at', 'timestamptz', (c) => c.notNull())
    .addPrimaryKeyConstraint('idempotency_records_pk', ['scope', 'key'])
    .execute();
  await db.schema
    .createTable('dnc_numbers')
    .addColumn('tenant_id', 'text', (c) => c.notNull().references('companies.id'))
    .addColumn('number', 'text', (c) => c.notNull())
    .addColumn('source', 'text', (c) => c.notNull())
    .addColumn('created_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .addPrimaryKeyConstraint('dnc_numbers_pk', ['tenant_id', 'number'])
    .execute();

  await db.schema
    .createIndex('idempotency_records_expiry')
    .on('idempotency_records')
    .column('expires_at')
    .execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  for (const t of ['dnc_numbers', 'idempotency_records', 'api_keys', 'sessions', 'company_users', 'operators', 'registered_emails', 'companies']) {
    await db.schema.dropTable(t).ifExists().execute();
  }
}

import { readFile } from 'node:fs/promises';
import { ApplicationUsers, UserRecordError, type UserRecord } from '../../service/routes/application-users.js';
import { CliExit, EXIT } from '../exit.js';
import type { Output } from '../output.js';
import { serviceOptionsFromEnv } from '../service-config.js';
import { withDb } from './with-db.js';

function users(db: Parameters<Parameters<typeof withDb>[1]>[0]): ApplicationUsers {
  const env = serviceOptionsFromEnv();
  return new ApplicationUsers(db, { vendorPrefix: env.vendorPrefix ?? 'service' }, env.publicUrl ?? '');
}

function invalid(err: unknown): never {
  if (err instanceof UserRecordError) throw new CliExit(EXIT.error, err.problems.map((p) => `edgeplane: ${p}`).join('\n'));
  throw err;
}

export interface UsersRecordFlags {
  account: string; providerName: string; providerUrl: string; providerUserId: string;
  username?: string; email?: string; name?: string; at?: string; json?: boolean; state?: string;
}

/** One sign-in: creates the user or updates it, `last_login` / `last_active` set to --at (default now). */
export async function usersRecord(out: Output, flags: UsersRecordFlags) {
  const at = flags.at ?? new Date().toISOString();
  const input: UserRecord = {
    account_id: flags.account,
    identity_provider: { name: flags.providerName, url: flags.providerUrl },
    provider_user_id: flags.providerUserId,
    ...(flags.username !== undefined ? { username: flags.username } : {}),
    ...(flags.email !== undefined ? { email: flags.email } : {}),
    ...(flags.name !== undefined ? { name: flags.name } : {}),
    last_login: at,
    last_active: at,
  };
  const result = await withDb({ stateDir: flags.state }, (db) => users(db).record(input)).catch(invalid);
  if (flags.json) return out.json({ outcome: result.outcome, application_user: result.user });
  out.line(`application user ${result.user.id as string} ${result.outcome}`);
}

export interface UsersImportFlags { account?: string; json?: boolean; state?: string }

/** A JSON array of users (each with account_id, or --account for all); checked whole before writing. */
export async function usersImport(out: Output, file: string, flags: UsersImportFlags) {
  let parsed: unknown;
  try {
    parsed = JSON.parse(await readFile(file, 'utf8'));
  } catch (err) {
    throw new CliExit(EXIT.error, `edgeplane: ${file}: ${(err as Error).message}`);
  }
  const list = Array.isArray(parsed) ? parsed : (parsed as { application_users?: unknown })?.application_users;
  if (!Array.isArray(list)) throw new CliExit(EXIT.error, `edgeplane: ${file}: expected a JSON array of users (or {"application_users": [...]})`);
  const records = flags.account ? list.map((r) => (r && typeof r === 'object' && !('account_id' in r) ? { account_id: flags.account, ...r } : r)) : list;
  const result = await withDb({ stateDir: flags.state }, (db) => users(db).import(records)).catch(invalid);
  const summary = { created: result.created, updated: result.updated, unchanged: result.unchanged };
  if (flags.json) return out.json(summary);
  out.line(`${records.length} application users: ${summary.created} created, ${summary.updated} updated, ${summary.unchanged} unchanged`);
}

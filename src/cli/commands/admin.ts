import { createAccount, createKey, listAccounts, listKeys, parseScope, parseStacks, revokeKey, setAbuseReports } from '../../service/auth.js';
import type { Output } from '../output.js';
import { withDb } from './with-db.js';

/** An account's name: 1–100 characters, no control characters (it is shown in lists and logs). */
function checkAccountName(name: string): void {
  if (!name.trim() || name.length > 100 || /[\u0000-\u001f\u007f]/.test(name)) {
    throw new Error('--name must be 1 to 100 characters, not only spaces, with no control characters (tab, newline …)');
  }
}

export async function accountsCreate(out: Output, flags: { name: string; abuseReports?: boolean; scope?: string; json?: boolean; state?: string }) {
  checkAccountName(flags.name);
  const scope = parseScope(flags.scope ?? 'write');
  const issued = await withDb({ stateDir: flags.state }, (db) => createAccount(db, { name: flags.name, abuseReports: flags.abuseReports, scope }));
  if (flags.json) return out.json({ account_id: issued.account_id, api_key: issued.api_key, key_id: issued.key_id, scope: issued.scope });
  out.line(`account ${issued.account_id} created${flags.abuseReports ? ' (abuse reports enabled)' : ''}`);
  out.line(`API key ${issued.key_id} (scope ${issued.scope}): ${issued.api_key}`);
  out.line('The key is shown only this once; it is stored as a hash.');
}

export async function keysCreate(out: Output, flags: { account: string; scope?: string; stacks?: string; json?: boolean; state?: string }) {
  const scope = parseScope(flags.scope ?? 'write');
  const stacks = flags.stacks === undefined ? undefined : parseStacks(flags.stacks);
  const issued = await withDb({ stateDir: flags.state }, (db) => createKey(db, flags.account, scope, stacks));
  if (flags.json) return out.json({ account_id: issued.account_id, api_key: issued.api_key, key_id: issued.key_id, scope: issued.scope, stacks: issued.stacks });
  out.line(`API key ${issued.key_id} for ${issued.account_id} (scope ${issued.scope}${issued.stacks ? `, stacks ${issued.stacks.join(', ')}` : ''}): ${issued.api_key}`);
  out.line('The key is shown only this once; it is stored as a hash.');
}

export async function keysRevoke(out: Output, keyId: string, flags: { state?: string }) {
  // A key given where its id belongs is refused without being echoed: error output ends up in logs.
  if (keyId.startsWith('ep_')) throw new Error('give the key\'s id (key_…, from `admin keys list`), not the key itself');
  const done = await withDb({ stateDir: flags.state }, (db) => revokeKey(db, keyId));
  if (!done) throw new Error(`no active API key ${keyId}`);
  out.line(`API key ${keyId} revoked (processes that cached it stop accepting it within 5 seconds)`);
}

export async function accountsList(out: Output, flags: { json?: boolean; state?: string }) {
  const accounts = await withDb({ stateDir: flags.state }, (db) => listAccounts(db));
  if (flags.json) return out.json(accounts);
  if (!accounts.length) return out.line('no accounts');
  for (const a of accounts) {
    const keys = `${a.active_keys} active key${a.active_keys === 1 ? '' : 's'}`;
    out.line(`${a.id}  ${a.name}  ${keys}${a.abuse_reports ? ', abuse reports' : ''}  created ${a.created_at}`);
  }
}

export async function keysList(out: Output, flags: { account: string; json?: boolean; state?: string }) {
  const keys = await withDb({ stateDir: flags.state }, (db) => listKeys(db, flags.account));
  if (flags.json) return out.json(keys);
  if (!keys.length) return out.line(`no API keys for ${flags.account}`);
  for (const k of keys) out.line(`${k.id}  scope ${k.scope}${k.stacks ? `  stacks ${k.stacks.join(',')}` : ''}  created ${k.created_at}  ${k.revoked_at ? `revoked ${k.revoked_at}` : 'active'}`);
}

export async function accountsUpdate(out: Output, accountId: string, flags: { abuseReports?: boolean; state?: string }) {
  if (flags.abuseReports === undefined) throw new Error('nothing to change: give --abuse-reports or --no-abuse-reports');
  const done = await withDb({ stateDir: flags.state }, (db) => setAbuseReports(db, accountId, flags.abuseReports!));
  if (!done) throw new Error(`account ${accountId} does not exist`);
  out.line(`account ${accountId}: abuse reports ${flags.abuseReports ? 'enabled' : 'disabled'} (processes that cached its keys see it within 5 seconds)`);
}

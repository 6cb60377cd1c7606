// Loads sql/queries/<name>.sql once at boot: a missing file fails the start, not a request.
import { readdirSync, readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";

export const SQL_DIR = fileURLToPath(new URL("../../sql", import.meta.url));

export const QUERY_NAMES = [
  "meter_call",
  "meter_calls",
  "wallets_select_records",
  "usage_counts_upsert_many",
  "usage_counts_select_summary",
  "usage_counts_select_by_route",
  "usage_counts_select_by_day",
  "idempotent_responses_complete",
  "idempotent_responses_release",
  "accounts_insert",
  "accounts_select_by_id",
  "api_keys_insert",
  "api_keys_select_for_usage",
  "credit_grants_insert",
  "account_credits_select",
  "rate_windows_select",
  "stats_snapshots_select_latest",
  "stats_snapshots_upsert_counts",
  "wallets_upsert_many",
  "links_upsert_many",
  "farcaster_accounts_upsert_many",
  "twitter_reachability_upsert_many",
  "wallets_refresh_last_updated",
  "wallets_count",
  "server_secrets_ensure",
  "reverse_entries_select_page",
  "maintenance_runs_acquire",
  "maintenance_runs_renew",
  "maintenance_runs_release",
  "maintenance_runs_select",
  "maintenance_runs_select_metrics",
  "jobs_select_metrics",
  "jobs_release",
  "twitter_handles_select_due",
  "reachability_check_days_add",
  "reachability_check_days_select",
  "jobs_insert",
  "jobs_select_active_by_account",
  "job_wallet_slices_insert",
  "job_wallet_slices_select_range",
  "jobs_select_for_account",
  "jobs_claim_next",
  "jobs_checkpoint",
  "jobs_fail",
  "jobs_notify",
  "jobs_complete",
  "jobs_stage",
  "reverse_pending_defer",
  "reverse_pending_flush",
  "session_custom_plans",
  "session_async_commit",
  "links_select_found_wallets",
  "live_answers_select_fresh",
  "live_answers_upsert_many",
  "oauth_clients_insert",
  "oauth_clients_select",
  "oauth_clients_upsert_document",
  "oauth_request_counts_hit",
  "oauth_consents_insert",
  "oauth_consents_select",
  "oauth_consents_take",
  "oauth_consent_key_select",
  "oauth_codes_insert",
  "oauth_codes_select_for_update",
  "oauth_codes_mark_used",
  "oauth_internal_key_insert",
  "oauth_connections_insert",
  "oauth_tokens_insert_pair",
  "oauth_tokens_select_refresh",
  "oauth_tokens_rotate",
  "oauth_tokens_select_connection",
  "oauth_tokens_verify_access",
  "oauth_connections_revoke",
  "oauth_connections_select_by_account",
  "oauth_connections_touch",
  "mcp_hourly_requests_count",
  "mcp_hourly_requests_delete_before",
  "x402_payments_select_by_key",
  "x402_payments_claim",
  "x402_payments_record_outcome",
  "x402_payments_lock",
  "x402_payments_mark_granted",
  "x402_wallets_count_purchase",
  "x402_wallets_set_account",
  "x402_wallets_select_keys",
  "x402_api_keys_select_active",
  "x402_api_keys_revoke_all",
  "x402_recovery_uses_insert",
  "x402_recovery_uses_prune",
  "role_settings_apply",
] as const;

export type QueryName = (typeof QUERY_NAMES)[number];

let loaded: Map<string, string> | undefined;

export function loadQueries(): Map<string, string> {
  if (loaded) return loaded;
  const dir = `${SQL_DIR}/queries`;
  const files = new Set(readdirSync(dir));
  const map = new Map<string, string>();
  for (const name of QUERY_NAMES) {
    if (!files.has(`${name}.sql`)) throw new Error(`Cannot start: query file sql/queries/${name}.sql is missing`);
    map.set(name, readFileSync(`${dir}/${name}.sql`, "utf8"));
  }
  loaded = map;
  return map;
}

export function sql(name: QueryName): string {
  return loadQueries().get(name)!;
}

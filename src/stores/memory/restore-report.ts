/**
 * What a `MemoryStore.restore` did with each saved table, for the operator: which records came
 * back exactly, which were kept only conservatively (summarised: over-counted, never under),
 * which were dropped, and why. A table is adopted when a rule of its id and shape is bound, so
 * the report is read after the rules are bound (`sluice serve --state` logs it then).
 */

/** One saved table (a rule id and shape) and what became of its records. */
export interface RestoredTable {
  /** The rule identity the records were saved under (a binding's `id`). */
  rule: string;
  /** The rule's shape when saved (algorithms and windows; a window change makes another shape). */
  shape: string;
  /** `adopted`: a rule of this id and shape is bound and took the records; `waiting`: none is bound (yet); `dropped`: refused whole. */
  status: "adopted" | "waiting" | "dropped";
  /** Records saved (`Map` tier and compact tier). */
  saved: number;
  /** Records back exactly, each for its own key. */
  exact: number;
  /** Records kept only in the rule's summary (conservative: their keys may be over-counted, never under). */
  summarised: number;
  /** Records dropped with nothing kept for them. */
  dropped: number;
  /** Records that had become fresh by the restore (nothing to keep: their keys decide as new ones). */
  expired: number;
  /** Why records were summarised or dropped, or why the table waits (empty when all came back exactly). */
  reasons: string[];
}

/** What every `restore` of a store did so far. */
export interface RestoreReport {
  /** One entry per saved table. */
  tables: RestoredTable[];
  /** Sums over the tables. */
  saved: number;
  exact: number;
  summarised: number;
  dropped: number;
  expired: number;
  /** Records of tables no bound rule has taken (yet). */
  waiting: number;
}

/** A report entry for a saved table, before adoption. */
export function savedTable(rule: string, shape: string, saved: number): RestoredTable {
  return { rule, shape, status: "waiting", saved, exact: 0, summarised: 0, dropped: 0, expired: 0, reasons: [] };
}

/** The sums of `tables`. */
export function sumReport(tables: RestoredTable[]): RestoreReport {
  const report: RestoreReport = { tables, saved: 0, exact: 0, summarised: 0, dropped: 0, expired: 0, waiting: 0 };
  for (const t of tables) {
    report.saved += t.saved;
    report.exact += t.exact;
    report.summarised += t.summarised;
    report.dropped += t.dropped;
    report.expired += t.expired;
    if (t.status === "waiting") report.waiting += t.saved;
  }
  return report;
}

/**
 * Log lines for `report`: one line of totals, then one per table that did not come back whole
 * and exactly (rule names are quoted as JSON, so no rule text can forge a log line).
 */
export function describeRestore(report: RestoreReport): string[] {
  const lines = [
    `restored ${report.exact} key records exactly, ${report.summarised} into summaries (over-counted, never under), dropped ${report.dropped}, ${report.expired} had expired, ${report.waiting} wait for their rule`,
  ];
  for (const t of report.tables) {
    if (t.reasons.length === 0) continue;
    const what = `${t.exact} exact, ${t.summarised} summarised, ${t.dropped} dropped of ${t.saved}`;
    lines.push(`  rule ${JSON.stringify(t.rule)} (${t.shape}), ${t.status}: ${what}: ${t.reasons.join("; ")}`);
  }
  return lines;
}

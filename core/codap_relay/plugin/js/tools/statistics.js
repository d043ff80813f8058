// @ts-check
// compute_codap_statistics: summary statistics computed by CODAP's own formula engine (formula_values.js says
// how: hidden formula attributes added, read and removed in one message), over every case, the cases matching a
// condition, or per group (the values of an attribute or of a formula, or groups named by conditions).

import { ToolError, collection, get, invalid, plural, toolResult, unknownAttribute } from "./context.js";
import { createFormulaValues, errorText, isError, ref } from "./formula_values.js";
import { MAX_GROUPS, NO_VALUE, createStatisticsGroups } from "./statistics_groups.js";
import { createLocalStatistics, localStatistic, randomColumns, redrawNote, rowMembers } from "./statistics_local.js";

/**
 * @import {DescribedAttribute, DescribedCollection, DescribedDataset} from "../types.js"
 * @import {ToolContext} from "./context.js"
 * @import {Group} from "./statistics_groups.js"
 */

/**
 * A statistic: whether it needs numbers, and its CODAP formula of an attribute reference, a filter condition (or
 * null) and the percentile asked for.
 * `y`: the second attribute of the statistics of two attributes (correlation, rSquared, slope, intercept).
 * @typedef {{numeric: boolean, paired?: boolean,
 *   formula: (x: string, filter: string | null, percentile?: number, y?: string) => string}} Statistic
 */

/** @type {(fn: string, x: string, filter: string | null, extra?: string | null) => string} */
const call = (fn, x, filter, extra = null) =>
  `${fn}(${[x, ...(extra === null ? [] : [extra]), ...(filter ? [filter] : [])].join(", ")})`;

/**
 * Each statistic as a CODAP formula of an attribute reference, a filter condition (or null) and the percentile.
 * @type {Record<string, Statistic>}
 */
const STATISTICS = {
  count: { numeric: false, formula: (x, f) => call("count", x, f) },
  mean: { numeric: true, formula: (x, f) => call("mean", x, f) },
  median: { numeric: true, formula: (x, f) => call("median", x, f) },
  sd: { numeric: true, formula: (x, f) => call("stdDev", x, f) },
  variance: { numeric: true, formula: (x, f) => call("variance", x, f) },
  min: { numeric: true, formula: (x, f) => call("min", x, f) },
  max: { numeric: true, formula: (x, f) => call("max", x, f) },
  sum: { numeric: true, formula: (x, f) => call("sum", x, f) },
  q1: { numeric: true, formula: (x, f) => call("percentile", x, f, "0.25") },
  q3: { numeric: true, formula: (x, f) => call("percentile", x, f, "0.75") },
  iqr: {
    numeric: true,
    formula: (x, f) => `${call("percentile", x, f, "0.75")} - ${call("percentile", x, f, "0.25")}`,
  },
  range: { numeric: true, formula: (x, f) => `${call("max", x, f)} - ${call("min", x, f)}` },
  mad: { numeric: true, formula: (x, f) => call("mad", x, f) },
  percentile: { numeric: true, formula: (x, f, p) => call("percentile", x, f, String(/** @type {number} */ (p) / 100)) },
  // Of two attributes: CODAP's bivariate functions take x, y and a filter (the least-squares line of y on x).
  correlation: { numeric: true, paired: true, formula: (x, f, _p, y) => call("correlation", x, f, y) },
  rSquared: { numeric: true, paired: true, formula: (x, f, _p, y) => call("rSquared", x, f, y) },
  slope: { numeric: true, paired: true, formula: (x, f, _p, y) => call("linRegrSlope", x, f, y) },
  intercept: { numeric: true, paired: true, formula: (x, f, _p, y) => call("linRegrIntercept", x, f, y) },
};
const DEFAULT_STATISTICS = ["count", "mean", "median", "sd", "min", "max", "q1", "q3"];
/** At most this many case values read by the aggregates of one call (a few seconds of CODAP's time). */
const MAX_WORK = 1_000_000;

/**
 * A number as shown in the text table: CODAP's full value in structuredContent.
 * @param {unknown} v
 */
function shown(v) {
  if (v === null || v === undefined) return "—";
  if (typeof v !== "number") return String(v);
  if (Number.isInteger(v)) return String(v);
  return String(Number(v.toPrecision(6)));
}


/** @param {ToolContext} ctx */
export function createStatisticsTool(ctx) {
  const { must, findDataset, describeDatasets } = ctx;
  const { temporaryPrefix, withTemporaryFormulas } = createFormulaValues(ctx);
  const { groupsOf } = createStatisticsGroups(ctx);
  const { casesAndMatches } = createLocalStatistics(ctx);

  /**
   * @param {{datasetName: string, attributes: string[], statistics?: string[], where?: string, groupBy?: string,
   *   groups?: Record<string, string>, percentile?: number, pairedWith?: string}} args
   */
  async function compute_codap_statistics(args) {
    const statistics = args.statistics ?? DEFAULT_STATISTICS;
    const { where, groupBy, percentile, pairedWith } = args;
    const named = args.groups ?? null;
    if (named && groupBy !== undefined) {
      throw invalid("Give groupBy (an attribute or a formula whose values are the groups) or groups (conditions by " +
        "name), not both.");
    }
    if (named) {
      const entries = Object.entries(named);
      if (entries.length === 0) throw invalid("groups is empty: name each group and give its condition, e.g. " +
        '{"walk or bike": "transport = \\"walk\\" or transport = \\"bike\\""}.');
      const blank = entries.find(([label, cond]) => !label.trim() || typeof cond !== "string" || !cond.trim());
      if (blank) throw invalid(`Group ${JSON.stringify(blank[0])} needs a name and a CODAP condition.`);
    }
    if (statistics.includes("percentile") && percentile === undefined) {
      throw invalid('The statistic "percentile" needs the `percentile` argument (0-100, e.g. 90).');
    }
    const paired = statistics.filter((s) => STATISTICS[s].paired);
    if (paired.length && pairedWith === undefined) {
      throw invalid(
        `${paired.join(", ")} ${paired.length === 1 ? "is a statistic" : "are statistics"} of two attributes: give the ` +
          "second as pairedWith (e.g. attributes [\"height\"], pairedWith \"weight\"; slope and intercept are of the " +
          "least-squares line of pairedWith on the attribute).",
      );
    }
    if (where !== undefined && where.trim() === "") throw invalid("where must be a CODAP condition, or left out.");
    const found = await findDataset(args.datasetName);
    // With types: the attributes' formulas, to tell a dataset drawing random values.
    const { datasets: [dataset] } = await describeDatasets([found]);
    /** @type {(name: string, role: string) => import("../types.js").DescribedAttribute & {coll: DescribedCollection, index: number}} */
    const attrInfo = (name, role) => {
      for (const [index, c] of dataset.collections.entries()) {
        const a = c.attributes.find((x) => x.name === name);
        if (a) return { ...a, coll: c, index };
      }
      throw unknownAttribute(dataset, name, role);
    };
    const attrs = args.attributes.map((n) => attrInfo(n, "statistics"));
    // groupBy: an attribute by its exact name; else a formula, unless it is a bare word (a misspelt name).
    const byFormula = groupBy !== undefined && !dataset.attributes.includes(groupBy) && !/^[\p{L}_][\p{L}\p{N}_]*$/u.test(groupBy);
    const grouping = groupBy === undefined || byFormula ? null : attrInfo(groupBy, "groupBy");
    const partner = pairedWith === undefined ? null : attrInfo(pairedWith, "pairedWith");
    // The cases summarised are those of the attributes' collection (`home`). In a grouped dataset CODAP's
    // aggregates of a child collection work per parent case: the statistics are computed in the parent
    // collection, a row per parent case (a groupBy naming the parent's attribute says the same).
    const home = attrs[0].coll;
    const parent = attrs[0].index > 0 ? dataset.collections[attrs[0].index - 1] : null;
    const top = home;
    const groupedByParent = Boolean(parent && grouping && grouping.coll === parent);
    const apart = [...attrs, ...(partner ? [partner] : []), ...(grouping && !groupedByParent ? [grouping] : [])]
      .find((a) => a.coll !== home);
    if (apart || (parent && (named || byFormula || (grouping && !groupedByParent)))) {
      const names = (/** @type {DescribedCollection} */ c) => c.attributes.map((x) => x.name).join(", ");
      throw new ToolError(
        apart
          ? `Attributes ${JSON.stringify(attrs[0].name)} (collection ${JSON.stringify(home.name)}) and ` +
            `${JSON.stringify(apart.name)} (collection ${JSON.stringify(apart.coll.name)}) are in different collections ` +
            "of a grouped dataset: CODAP's aggregates summarise one collection's cases at a time. Ask for the " +
            "attributes of one collection (" + dataset.collections.map((c) => `${c.name}: ${names(c)}`).join("; ") +
            "), or ungroup the dataset (group_codap_cases with ungroup true)."
          : `${JSON.stringify(home.name)} is a child collection of ${JSON.stringify(/** @type {DescribedCollection} */ (parent).name)}: ` +
            "CODAP computes the statistics of its attributes per parent case, one row per " +
            `${JSON.stringify(/** @type {DescribedCollection} */ (parent).name)} case (leave out groupBy and groups, or ` +
            `groupBy its attribute ${JSON.stringify(/** @type {DescribedCollection} */ (parent).attributes[0]?.name)}). To group ` +
            "otherwise, ungroup the dataset first (group_codap_cases with ungroup true).",
        "hierarchical_dataset",
        { datasetName: dataset.name, attribute: (apart ?? attrs[0]).name, collection: (apart ?? attrs[0]).coll.name,
          ...(parent ? { parentCollection: parent.name } : {}) },
      );
    }
    if (parent && parent.caseCount > MAX_GROUPS) {
      throw new ToolError(
        `${JSON.stringify(home.name)} is grouped in ${parent.caseCount} ${JSON.stringify(parent.name)} cases, and CODAP ` +
          `computes its statistics per parent case: at most ${MAX_GROUPS} rows. Ungroup the dataset ` +
          "(group_codap_cases with ungroup true) for statistics over all its cases.",
        "too_many_groups",
        { datasetName: dataset.name, groups: parent.caseCount, max: MAX_GROUPS, parentCollection: parent.name },
      );
    }
    if (top.caseCount === 0) {
      throw new ToolError(`Dataset ${JSON.stringify(dataset.name)} has no cases yet.`, "no_cases", {
        datasetName: dataset.name,
      });
    }

    const prefix = temporaryPrefix(dataset);
    // A dataset drawing random values: computed here from the values CODAP holds where that can be (a hidden
    // attribute would make CODAP draw them anew, statistics_local.js), else the answer says CODAP drew anew.
    const random = randomColumns(dataset);
    const local = random.length > 0 && !parent && !byFormula;
    const { groups, temporary: groupAttributes, column } = parent
      ? { groups: [null], temporary: [], column: parent.attributes.map((a) => a.name).join(" & ") }
      : local && named
        ? { groups: Object.entries(named).map(([label, c]) => /** @type {Group} */ ({ label, condition: c, shown: `(${c})` })),
          temporary: [], column: "group" }
        : await groupsOf(dataset, prefix, { attribute: grouping, formula: byFormula ? /** @type {string} */ (groupBy) : null, named });
    const held = local
      ? await casesAndMatches(dataset, top, [
        ...(where === undefined ? [] : [{ condition: where, role: "where condition", key: "where" }]),
        ...(named ? Object.entries(named).map(([label, condition]) => ({ condition, role: `condition of group ${JSON.stringify(label)}`, key: "condition" })) : []),
      ])
      : null;
    const membersOf = rowMembers(held, { where: where !== undefined, named, grouping: grouping?.name ?? null });

    // Two hidden attributes whatever the number of groups, statistics and attributes (each added attribute
    // costs CODAP a pass over every case; the aggregates inside one formula are what CODAP computes anyway), and
    // those of the groups (groupsOf):
    // - the where condition as it stands, evaluated case by case (its errors are CODAP's reasons for it, and
    //   CODAP's `and` cannot work inside an aggregate's filter, where values come as arrays: "Unexpected type of
    //   argument in function and … actual: Array"; `if` can);
    // - one concat() of every statistic of every row, each as the aggregate CODAP offers, with the row's filter:
    //   the where attribute (if() reads its "true"/"false") and/or the group's condition. Numbers come back as
    //   the text JavaScript gives a number (it reads back as the same number), joined by "|".
    const whereName = `${prefix}where`;
    /** @type {string[]} */
    const fields = [];
    /** @type {Array<() => number | null>} each field computed from the held values */
    const locals = [];
    /** @type {(formula: string, computed: () => number | null) => number} */
    const add = (formula, computed) => { locals.push(computed); return fields.push(formula) - 1; };
    const rows = groups.map((g) => {
      const cond = g?.condition ?? null;
      const filter = where === undefined ? cond : `if(${ref(whereName)}, ${cond ?? "true"}, false)`;
      const condition = [where === undefined ? null : `(${where})`, g?.shown ?? null].filter(Boolean).join(" and ");
      const members = () => membersOf(g);
      const casesSlot = filter ? add(`count(${filter})`, () => members().length) : parent ? add("count()", () => null) : null;
      return {
        group: g,
        condition,
        casesSlot,
        cells: attrs.map((a) => ({
          attribute: a.name,
          slots: statistics.map((s) => {
            const y = partner ? ref(partner.name) : undefined;
            const formula = STATISTICS[s].formula(ref(a.name), filter, percentile, y);
            // As the answer shows it: the row's condition by name.
            const shownFormula = STATISTICS[s].formula(ref(a.name), condition ? "condition" : null, percentile, y);
            const computed = () => {
              const m = members();
              return localStatistic(s, m.map((c) => c.values[a.name]),
                { percentile, ...(partner ? { partner: m.map((c) => c.values[partner.name]) } : {}) });
            };
            return { statistic: s, formula, shownFormula, slot: add(formula, computed) };
          }),
        })),
      };
    });
    const aggregate = /\b(count|mean|median|stdDev|variance|min|max|sum|mad|percentile|correlation|rSquared|linRegrSlope|linRegrIntercept)\(/g;
    const passes = fields.reduce((n, f) => n + (f.match(aggregate)?.length ?? 0), 0);
    if (passes * top.caseCount > MAX_WORK) {
      throw new ToolError(
        `That is ${passes} aggregate computations over ${plural(top.caseCount, "case")}, more than CODAP can do ` +
          `in a few seconds (at most ${MAX_WORK.toLocaleString("en")} case values). Ask for fewer statistics, ` +
          "attributes or groups at a time.",
        "too_much_work",
        { datasetName: dataset.name, aggregates: passes, caseCount: top.caseCount },
      );
    }
    // Named groups may overlap or leave cases out: the cases matched are counted on their own.
    const matchedSlot = named && where !== undefined
      ? add(`count(if(${ref(whereName)}, true, false))`, () => membersOf(null).length)
      : null;
    const statsName = `${prefix}stats`;
    const temporary = [
      ...(where === undefined ? [] : [{ name: whereName, formula: where }]),
      ...groupAttributes,
      { name: statsName, formula: `concat(${fields.join(', "|", ')})`, ...(parent ? { coll: parent } : {}) },
    ];
    // The statistics are read from the first case (the same for every case), or from each parent case.
    const read = get(`${collection(dataset.id, top.id)}.caseByIndex[0]`);
    const parentReads = parent
      ? Array.from({ length: parent.caseCount }, (_, i) => get(`${collection(dataset.id, parent.id)}.caseByIndex[${i}]`))
      : [];
    // Held values: each field as the text of its number (it reads back as the same number), as CODAP's concat().
    const { readReplies: [caseReply, ...parentReplies] } = local
      ? { readReplies: [{ success: true, values: { case: { values: {
        [statsName]: locals.map((f) => { const v = f(); return v === null ? "" : String(v); }).join("|") } } } }] }
      : await withTemporaryFormulas(dataset, top, temporary, [read, ...parentReads]);
    /** @type {Record<string, unknown>} */
    const values = must(read, /** @type {import("../types.js").CodapReply} */ (caseReply),
      `reading the computed statistics of ${JSON.stringify(dataset.name)}`).values?.case?.values ?? {};
    /** @type {Array<{label: string | null, values: Record<string, unknown>}>} where the statistics were read */
    const sources = parent
      ? parentReplies.map((r, i) => {
        const own = must(parentReads[i], r, `reading the computed statistics of ${JSON.stringify(dataset.name)}`)
          .values?.case?.values ?? {};
        return { label: parent.attributes.map((a) => String(own[a.name] ?? "")).join(", "), values: own };
      })
      : [{ label: null, values }];

    const whereValue = values[whereName];
    if (where !== undefined && isError(whereValue)) {
      const reason = errorText(whereValue);
      throw new ToolError(
        `CODAP cannot evaluate the where condition ${JSON.stringify(where)} on ${JSON.stringify(dataset.name)}: ` +
          `${reason}. Attributes of ${JSON.stringify(top.name)}: ${top.attributes.map((a) => a.name).join(", ")}.`,
        "formula_error",
        { datasetName: dataset.name, where, codapError: reason },
      );
    }
    for (const g of groups) {
      const v = g?.attribute === undefined ? undefined : values[g.attribute];
      if (g && isError(v)) {
        const reason = errorText(v);
        throw new ToolError(
          `CODAP cannot evaluate the condition of group ${JSON.stringify(g.label)}, ${JSON.stringify(named?.[g.label])}, ` +
            `on ${JSON.stringify(dataset.name)}: ${reason}. Attributes of ${JSON.stringify(top.name)}: ` +
            `${top.attributes.map((a) => a.name).join(", ")}.`,
          "formula_error",
          { datasetName: dataset.name, group: g.label, condition: named?.[g.label], codapError: reason },
        );
      }
    }
    /**
     * The values of one source's statistics attribute, by slot.
     * @param {unknown} statsValue
     */
    const valuesOf = (statsValue) => {
      if (isError(statsValue)) {
        const reason = errorText(statsValue);
        throw new ToolError(
          `CODAP could not compute the statistics of ${attrs.map((a) => JSON.stringify(a.name)).join(", ")} ` +
            `(formulas such as ${JSON.stringify(rows[0].cells[0].slots[0].shownFormula)}): ${reason}.`,
          "formula_error",
          { datasetName: dataset.name, formula: rows[0].cells[0].slots[0].shownFormula, codapError: reason },
        );
      }
      const texts = statsValue === undefined || statsValue === null ? [] : String(statsValue).split("|");
      if (texts.length !== fields.length) {
        throw new ToolError(
          `CODAP gave ${texts.length} values for ${fields.length} statistics: ${String(statsValue).slice(0, 200)}`,
          "codap_error",
          { datasetName: dataset.name },
        );
      }
      /** @param {number} slot */
      return (slot) => (texts[slot] === "" ? null : Number(texts[slot]));
    };

    /** @type {Array<{group?: string, attribute: string, cases: number | null, percent?: number | null, [statistic: string]: unknown}>} */
    const out = [];
    /** @type {string[]} */
    const empty = [];
    let matched = 0;
    for (const source of sources) {
      const value = valuesOf(source.values[statsName]);
      for (const row of rows) {
        const cases = row.casesSlot === null ? top.caseCount : value(row.casesSlot);
        matched += named ? 0 : cases ?? 0;
        const label = row.group?.label ?? source.label;
        if (label !== null && cases === 0) {
          if (label !== NO_VALUE) empty.push(label);
          continue;
        }
        for (const cell of row.cells) {
          /** @type {(typeof out)[number]} */
          const r = { ...(label === null ? {} : { group: label }), attribute: cell.attribute, cases };
          for (const s of cell.slots) r[s.statistic] = value(s.slot);
          out.push(r);
        }
      }
      if (named) matched = matchedSlot === null ? top.caseCount : /** @type {number} */ (value(matchedSlot));
    }
    if (named && out.length === 0 && matched > 0) {
      throw new ToolError(
        `No case of ${JSON.stringify(dataset.name)}${where === undefined ? "" : ` matching ${JSON.stringify(where)}`} ` +
          `is in any of the groups (${Object.entries(named).map(([k, v]) => `${k}: ${v}`).join("; ")}). Check the ` +
          "conditions: attribute names as written, text values in double quotes.",
        "no_matching_cases",
        { datasetName: dataset.name, groups: named, caseCount: top.caseCount },
      );
    }
    if (matched === 0) {
      throw new ToolError(
        `No case of ${JSON.stringify(dataset.name)} matches where ${JSON.stringify(where)} ` +
          `(${plural(top.caseCount, "case")} checked), so there is nothing to summarise. Loosen the condition.`,
        "no_matching_cases",
        { datasetName: dataset.name, where, caseCount: top.caseCount },
      );
    }
    const numericAsked = statistics.filter((s) => STATISTICS[s].numeric);
    if (numericAsked.length) {
      for (const a of attrs) {
        const mine = out.filter((r) => r.attribute === a.name);
        if (mine.every((r) => numericAsked.every((s) => r[s] === null))) {
          const withValues = mine.reduce((n, r) => n + (/** @type {any} */ (r).count ?? 0), 0);
          throw new ToolError(
            `Attribute ${JSON.stringify(a.name)} has no numeric values` +
              `${where === undefined ? "" : ` in the cases matching ${JSON.stringify(where)}`}, so ` +
              `${numericAsked.join(", ")} do not apply to it: the statistic that applies is count (cases with a ` +
              `value${statistics.includes("count") ? `: ${withValues}` : ""}). To count each of its values, use ` +
              `groupBy ${JSON.stringify(a.name)} with statistics ["count"].`,
            "non_numeric_attribute",
            { datasetName: dataset.name, attribute: a.name, applicable: ["count"] },
          );
        }
      }
    }

    // Each group's share of the cases considered ("what percent walk?"), from CODAP's counts.
    if (column) for (const r of out) r.percent = matched ? (100 * (r.cases ?? 0)) / matched : null;
    const header = [...(column ? [column] : []), "attribute", "cases", ...(column ? ["% of cases"] : []),
      ...statistics.map((s) => (s === "percentile" ? `p${percentile}` : s))];
    const lines = out.map((r) => [...(column ? [r.group] : []), r.attribute, r.cases,
      ...(column ? [shown(r.percent === null ? null : Number(/** @type {number} */ (r.percent).toFixed(1)))] : []),
      ...statistics.map((s) => shown(r[s]))].join(" | "));
    const scope = [
      where === undefined ? null : `where ${where}`,
      parent ? `per ${parent.name} case: in a grouped dataset CODAP's aggregates of a child collection work per parent case` : null,
      grouping ? `grouped by ${grouping.name}` : null,
      byFormula ? `grouped by the formula ${groupBy}` : null,
      named ? `in groups: ${Object.entries(named).map(([k, v]) => `${k} (${v})`).join(", ")}` : null,
    ].filter(Boolean);
    if (partner) scope.push(`paired with ${partner.name}`);
    let text = `Statistics of ${JSON.stringify(dataset.name)} computed ${local ? "from the values CODAP holds" : "by CODAP"}` +
      `${scope.length ? ` (${scope.join(", ")})` : ""}, ${plural(matched, "case")}` +
      `${where === undefined ? "" : ` of ${top.caseCount}`}:\n${header.join(" | ")}\n${lines.join("\n")}`;
    if (empty.length) text += `\nGroups with no matching case: ${empty.join(", ")}.`;
    if (named) {
      const counted = out.filter((r, i) => out.findIndex((o) => o.group === r.group) === i)
        .reduce((n, r) => n + (r.cases ?? 0), 0);
      if (counted !== matched) {
        text += `\nThe groups hold ${counted} cases of the ${matched} considered: ` +
          (counted > matched ? "some cases are in more than one group." : "some cases are in no group.");
      }
    }
    text += "\nShown to 6 significant digits; structuredContent has CODAP's full values. sd and variance divide " +
      "by n−1; q1, q3 and percentiles interpolate between sorted values (CODAP's percentile()).";
    if (local) {
      text += `\nComputed by CODAP's definitions from the values it holds: ${JSON.stringify(dataset.name)} draws ` +
        `random values (${random.map((c) => c.attribute).join(", ")}), and a hidden formula attribute would make CODAP ` +
        "draw them anew; the values in the table are unchanged.";
    } else if (random.length) {
      text += `\n${redrawNote(random, "when the hidden formula attributes were added and removed")} The numbers ` +
        "above are for the values CODAP held when the call began. To keep the draws, ask without a formula " +
        "groupBy (a plain attribute's values, where or groups are computed from the values held).";
    }
    const first = rows[0].cells[0].slots; // how CODAP computed the first row
    return toolResult(text, {
      datasetName: dataset.name,
      attributes: attrs.map((a) => a.name),
      statistics,
      ...(percentile === undefined ? {} : { percentile }),
      ...(partner ? { pairedWith: partner.name } : {}),
      ...(grouping ? { groupBy: grouping.name } : {}),
      ...(byFormula ? { groupBy } : {}),
      ...(named ? { groups: named } : {}),
      ...(where === undefined ? {} : { where }),
      ...(parent ? { perCaseOf: parent.name } : {}),
      casesMatched: matched,
      caseCount: top.caseCount,
      rows: out,
      ...(empty.length ? { groupsWithoutCases: empty } : {}),
      ...(random.length ? { randomColumns: random.map((c) => c.attribute), computedFrom: local ? "held values" : "formula" } : {}),
      ...(random.length && !local ? { redrawnRandomColumns: random } : {}),
      firstRow: {
        ...(rows[0].condition ? { condition: rows[0].condition } : {}),
        formulas: Object.fromEntries(first.map((s) => [s.statistic, s.shownFormula])),
      },
    });
  }

  return { compute_codap_statistics };
}

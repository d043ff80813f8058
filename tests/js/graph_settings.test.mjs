// The pure parts of the graph tools: colours as CODAP keeps them, a graph's state from what CODAP gives, the
// changes between two states, the plot changes update_codap_graph plans and the saved form a rebuild writes. Their
// effect in CODAP itself is tests/e2e/test_tools_graph_menus.py's.

import assert from "node:assert/strict";
import { test } from "node:test";

import { MAX_REBUILD_CHARS, rebuildComponent } from "../../core/codap_relay/plugin/js/tools/codap_document.js";
import { toHex, withOpacity } from "../../core/codap_relay/plugin/js/tools/colors.js";
import { applyRebuild, plotPlan } from "../../core/codap_relay/plugin/js/tools/graph_rebuild.js";
import { changesBetween } from "../../core/codap_relay/plugin/js/tools/graph_settings.js";
import { colorAndOpacity, describeGraphState, graphStateFrom } from "../../core/codap_relay/plugin/js/tools/graph_state.js";

/** A canvas whose fillStyle parses the few names these tests use, as a browser's does (unknown: unchanged). */
const page = {
  createElement: () => ({
    getContext: () => {
      const names = { red: "#ff0000", navy: "#000080", "rgba(0, 0, 255, 0.5)": "rgba(0, 0, 255, 0.5)" };
      let style = "#000000";
      return {
        get fillStyle() { return style; },
        set fillStyle(v) { style = v.startsWith("#") ? v : names[v] ?? style; },
      };
    },
  }),
};

test("colours are turned into CODAP's #rrggbb(aa), and an unknown one is refused", () => {
  assert.equal(toHex("#ABC", page), "#aabbcc");
  assert.equal(toHex("#1f77b4", page), "#1f77b4");
  assert.equal(toHex("red", page), "#ff0000");
  assert.equal(toHex("rgba(0, 0, 255, 0.5)", page), "#0000ff80");
  assert.equal(toHex("sparkly", page), null);
  assert.equal(toHex("red", undefined), null); // no canvas: only hex colours
  assert.equal(withOpacity("#ff0000", 0.5), "#ff000080");
  assert.equal(withOpacity("#ff000080", 1), "#ff0000");
  assert.deepEqual(colorAndOpacity("#FF000080"), { color: "#ff0000", opacity: 0.5 });
  assert.deepEqual(colorAndOpacity("#e6805b"), { color: "#e6805b", opacity: 1 });
});

const COMPONENT = {
  id: 7, title: "Heights", dataContext: "kids", plotType: "histogram", xAttributeName: "h", xAttributeType: "numeric",
  xLowerBound: 140, xUpperBound: 190, yAttributeNames: ["w", "t"], y2AttributeName: "t", legendAttributeName: "g",
  pointColor: "#1f77b4b3", pointSize: 2, strokeColor: "#ffffff", backgroundColor: "#ffffff", hiddenCases: [1, 2],
  displayOnlySelectedCases: null, pointsAreFusedIntoBars: true, filterFormula: "",
};
const STORAGE = {
  legendAttributeType: 2,
  plotBackgroundImage: "https://example.org/a.png",
  plotModels: [{ plotModelStorage: { width: 5, alignment: 150, totalNumberOfBins: 10, showMeasureLabels: true } }],
};

test("a graph's state comes from its component, adornments, legend attribute and saved form", () => {
  const state = graphStateFrom(COMPONENT, [{ type: "Box Plot", showOutliers: true }],
    { type: "numeric", _categoryMap: { A: "#ff0000", __order: ["A"], "low-attribute-color": "#eeeeee" } }, STORAGE, 3);
  assert.deepEqual(state.bins, { width: 5, alignment: 150, count: 10 });
  assert.deepEqual(state.points, { color: "#1f77b4", opacity: 0.7, size: 2, strokeColor: "#ffffff", strokeSameAsFill: false });
  assert.deepEqual(state.y.attributes, ["w"]); // CODAP lists the right axis's attribute among the y attributes
  assert.deepEqual(state.legend, { attribute: "g", type: "categorical", colors: { A: "#ff0000" } }); // treated as categorical
  assert.equal(state.shows.hiddenCases, 2);
  assert.equal(state.shows.onlySelected, false);
  assert.equal(state.shows.filterFormula, null);
  assert.equal(state.shows.setAsideCases, 3);
  assert.equal(state.measures.labels, true);
  assert.equal(state.background.image, "https://example.org/a.png");
  assert.deepEqual(state.adornments, [{ name: "box_plot", showOutliers: true }]);
  const words = describeGraphState(state);
  assert.match(words, /^histogram, x = h \(140 to 190\)/);
  assert.match(words, /bins of width 5 from 150/);
  assert.match(words, /2 cases hidden here; |2 cases hidden here, /);
  assert.match(words, /with box plot$/);
  const unread = graphStateFrom(COMPONENT, [], null, null, null);
  assert.equal(unread.measures.labels, null); // not read: said as unknown, not as false
  assert.equal(unread.background.image, null);
});

test("changes list what differs, leaving out what follows from another change unless it was asked", () => {
  const before = graphStateFrom(COMPONENT, [], null, STORAGE, 0);
  const after = graphStateFrom({ ...COMPONENT, legendAttributeName: "k", xLowerBound: 0, pointSize: 3 }, [],
    { type: "categorical", _categoryMap: { x: "#000000" } }, STORAGE, 0);
  const settings = changesBetween(before, after).map((c) => c.setting);
  assert.deepEqual(settings, ["xAxisMin", "legendAttribute", "pointSize"]);
  assert.ok(changesBetween(before, after, new Set(["legendColors"])).some((c) => c.setting === "legendColors"));
  const [change] = changesBetween(before, graphStateFrom({ ...COMPONENT, pointSize: 3 }, [], null, STORAGE, 0));
  assert.deepEqual(change, { setting: "pointSize", before: 2, after: 3, text: "point size 2 → 3" });
});

test("plot changes: unfuse, rebuild and fuse in turn, and plots that cannot take the type are refused", () => {
  const dots = { plotType: "dotPlot", xAttributeName: "h", primaryAxis: "x" };
  const histogram = plotPlan({ plotType: "histogram", binWidth: 5 }, dots, "g");
  assert.deepEqual([histogram.unfuse, histogram.rebuild, histogram.fuse], [false, { plotType: "binnedDotPlot", binWidth: 5 }, true]);
  const back = plotPlan({ plotType: "dot_plot" }, { ...dots, plotType: "histogram" }, "g");
  assert.deepEqual([back.unfuse, back.rebuild, back.fuse], [true, { plotType: "dotPlot" }, undefined]);
  const wider = plotPlan({ binWidth: 2 }, { ...dots, plotType: "histogram" }, "g");
  assert.deepEqual([wider.unfuse, wider.rebuild, wider.fuse], [false, { binWidth: 2 }, undefined]);
  const fused = plotPlan({ pointsAreFusedIntoBars: true }, dots, "g");
  assert.equal(fused.fuse, true);
  assert.match(fused.notes[0], /histogram/);
  const bars = plotPlan({ plotType: "bar_chart" }, dots, "g");
  assert.deepEqual([bars.treatAs, bars.fuse], ["xAttributeType", true]);
  const scatter = { plotType: "scatterPlot", xAttributeName: "h", yAttributeName: "w" };
  assert.throws(() => plotPlan({ plotType: "histogram" }, scatter, "g"), (e) => e.code === "plot_type_not_possible");
  assert.throws(() => plotPlan({ pointsAreFusedIntoBars: true }, scatter, "g"), (e) => e.code === "plot_type_not_possible");
  assert.deepEqual(plotPlan({ pointsAreFusedIntoBars: false }, scatter, "g").rebuild, null); // nothing to unfuse
  assert.throws(() => plotPlan({ plotType: "dot_plot", binWidth: 2 }, dots, "g"), (e) => e.code === "invalid_arguments");
});

test("a rebuild writes the saved form CODAP reads: plot class, bins, axis, measures and switches", () => {
  const storage = { xRole: 1, yRole: 4, plotModels: [{ plotClass: "DG.DotPlotModel", plotModelStorage: { adornments: {} } }] };
  applyRebuild(storage, { plotType: "binnedDotPlot", binWidth: 5, binAlignment: 0, measureLabels: true,
    adornments: { plottedBoxPlot: { isVisible: true } }, legendType: "categorical", imageLocked: true });
  const plot = storage.plotModels[0];
  assert.equal(plot.plotClass, "DG.BinnedPlotModel");
  assert.deepEqual([plot.plotModelStorage.width, plot.plotModelStorage.alignment, plot.plotModelStorage.dotsAreFused], [5, 0, false]);
  assert.equal(storage.xAxisClass, "DG.BinnedAxisModel");
  assert.equal(plot.plotModelStorage.showMeasureLabels, true);
  assert.deepEqual(plot.plotModelStorage.adornments.plottedBoxPlot, { isVisible: true });
  assert.equal(storage.legendAttributeType, 2);
  assert.equal(storage.plotBackgroundImageLockInfo.locked, true);
  applyRebuild(storage, { plotType: "linePlot" });
  assert.equal(plot.plotClass, "DG.LinePlotModel");
  assert.equal(plot.plotModelStorage.width, undefined);
  assert.equal(storage.xAxisClass, "DG.CellLinearAxisModel");
});

test("a rebuild that would change more than asked is refused before CODAP is asked", async () => {
  const graph = { guid: 5, type: "DG.GraphView", componentStorage: { plotModels: [{}] } };
  const sent = [];
  const io = { send: async (requests) => { sent.push(...requests); return requests.map(() => ({ success: true })); }, listen: null, sleep: async () => {} };
  const web = { guid: 6, type: "DG.WebView", componentStorage: { title: "notes", URL: "http://example.org/notes.html" } };
  // CODAP's reading of a saved document moves an http:// page to https:// (web-view-utils.ts processWebViewUrl)
  await assert.rejects(rebuildComponent(io, 5, () => {}, 9, { components: [graph, web] }),
    (e) => e.code === "rebuild_would_change_other_components" && /"notes" \(id 6\)/.test(e.message));
  const plugin = { guid: 9, type: "DG.GameView", componentStorage: { currentGameUrl: "http://127.0.0.1/plugin/" } };
  const big = { components: [graph, plugin], contexts: [{ guid: 1, name: "x".repeat(MAX_REBUILD_CHARS) }] };
  await assert.rejects(rebuildComponent(io, 5, () => {}, 9, big), (e) => e.code === "document_too_large");
  assert.deepEqual(sent, []); // nothing was sent to CODAP
});

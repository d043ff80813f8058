// @ts-check
// Tells the relay what CODAP said changed in the document, so an MCP client subscribed to a resource hears of it.
// CODAP sends the plugin notices: dataContextChangeNotice[<dataset>] (cases, attributes, collections of that
// dataset), documentChangeNotice (datasets created or deleted) and component notices (components created, deleted,
// retitled). They come in bursts (one per case added), so they are gathered and sent at most every `everyMs`.
// Only a relay that asked for them gets them (the session's `changes` path, given by a long-lived server).

/**
 * What one CODAP notice says changed: {datasets: names, listed: datasets or components came, went or renamed}.
 * @param {import("./types.js").CodapNotification | null | undefined} notice CODAP's notification, as it sent it
 * @returns {{datasets: string[], listed: boolean}}
 */
export function changeOf(notice) {
  const resource = typeof notice?.resource === "string" ? notice.resource : "";
  /** @type {any[]} */
  const values = Array.isArray(notice?.values) ? notice.values : [notice?.values];
  const operations = values.map((v) => (typeof v?.operation === "string" ? v.operation : ""));
  const dataset = /^dataContextChangeNotice\[(.*)\]$/.exec(resource);
  if (dataset) {
    // a rename changes the list; deleting cases or attributes does not
    const renamed = operations.some((op) => /^(updateDataContext|dataContextDeleted)$/.test(op));
    return { datasets: [dataset[1]], listed: renamed };
  }
  if (resource === "documentChangeNotice") {
    const deleted = values.map((v) => v?.deletedContext).filter((name) => typeof name === "string");
    const document = operations.some((op) => /dataContext|Document/i.test(op));
    return { datasets: deleted, listed: document };
  }
  if (resource === "component" || resource.startsWith("component[")) {
    return { datasets: [], listed: operations.some((op) => /create|delete|title|attach|open|close/i.test(op)) };
  }
  return { datasets: [], listed: false };
}

export class ChangeReporter {
  /**
   * @param {object} options
   * @param {(note: {datasets: string[], listChanged: boolean}) => Promise<unknown>} options.post
   * @param {number} [options.everyMs] at most one post per this many milliseconds
   * @param {(fn: () => void, ms: number) => any} [options.setTimer]
   * @param {(timer: any) => void} [options.clearTimer]
   */
  constructor({
    post,
    everyMs = 500,
    setTimer = (fn, ms) => globalThis.setTimeout(fn, ms), // called as a method, setTimeout itself would throw
    clearTimer = (timer) => globalThis.clearTimeout(timer),
  }) {
    this.post = post;
    this.everyMs = everyMs;
    this.setTimer = setTimer;
    this.clearTimer = clearTimer;
    /** @type {Set<string>} */
    this.datasets = new Set();
    this.listed = false;
    /** @type {any} */
    this.timer = null;
    this.stopped = false;
  }

  /**
   * One CODAP notice; what it says changed is sent with the others of its burst.
   * @param {import("./types.js").CodapNotification | null | undefined} notice
   */
  hear(notice) {
    if (this.stopped) return;
    const { datasets, listed } = changeOf(notice);
    if (!datasets.length && !listed) return;
    datasets.forEach((name) => this.datasets.add(name));
    this.listed ||= listed;
    this.timer ??= this.setTimer(() => this.flush(), this.everyMs);
  }

  /** A changing tool of this plugin finished: CODAP does not send the plugin that asked for a component its
   * notice, so a tool that may have made, removed or retitled one counts as a change of the list.
   * @param {string} tool */
  ranTool(tool) {
    if (/graph|table|text|slider|map|component|dataset|undo|redo|codap_api/.test(String(tool))) {
      this.hear({ resource: "component", values: { operation: "create" } });
    }
  }

  async flush() {
    this.timer = null;
    if (this.stopped || (!this.datasets.size && !this.listed)) return;
    const note = { datasets: [...this.datasets].slice(0, 100), listChanged: this.listed };
    this.datasets.clear();
    this.listed = false;
    try {
      await this.post(note);
    } catch {
      // a lost note costs a subscribed client one notification; the tools are unaffected
    }
  }

  stop() {
    this.stopped = true;
    if (this.timer !== null) this.clearTimer(this.timer);
    this.timer = null;
  }
}

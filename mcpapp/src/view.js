// The relay's MCP App: the live CODAP document in the chat. It runs in the host's sandboxed frame with no network
// of its own (its CSP declares no domain): everything it shows comes through the host, as resources/read of the
// relay's resources (codap://components, codap://activity, codap://graphs/ID/image).
import { App, applyDocumentTheme, applyHostStyleVariables } from "@modelcontextprotocol/ext-apps";

const app = new App({ name: "codap-relay document", version: "1.0.0" }, {});
const $ = (id) => /** @type {HTMLElement} */ (document.getElementById(id));

let focusGraph = null; // the graph the latest tool call named: shown first
let running = null; // the refresh under way; a tool result during it asks for one more
let again = false;

function el(tag, className, text) {
  const node = document.createElement(tag);
  if (className) node.className = className;
  if (text !== undefined) node.textContent = text; // never innerHTML: names come from the document
  return node;
}

async function read(uri) {
  const answer = await app.readServerResource({ uri });
  const item = answer.contents && answer.contents[0];
  if (!item) throw new Error(`${uri}: empty answer`);
  return item;
}

async function readJson(uri) {
  return JSON.parse((await read(uri)).text);
}

function graphsOf(components) {
  return components.filter((c) => c.type === "graph");
}

// CODAP's component types as a person knows them
const KINDS = { caseTable: "table", game: "plugin", calcView: "calculator", webView: "web page" };

function labelOf(c) {
  return c.title || c.name || c.dataset || `#${c.id}`;
}

async function showGraph(components) {
  const graphs = graphsOf(components);
  const box = $("graph");
  if (graphs.length === 0) {
    box.replaceChildren(el("p", "empty", "No graph in the document yet."));
    return;
  }
  const chosen = graphs.find((g) => String(g.id) === String(focusGraph)) || graphs[graphs.length - 1];
  const item = await read(`codap://graphs/${encodeURIComponent(String(chosen.id))}/image`);
  showPicture(item.mimeType, item.blob, chosen.id, labelOf(chosen));
}

function showPicture(mimeType, base64, graphId, label) {
  const img = el("img");
  img.alt = `Graph ${label}`;
  img.src = `data:${mimeType || "image/png"};base64,${base64}`;
  img.dataset.graphId = String(graphId);
  const figure = el("figure");
  figure.append(img, el("figcaption", "", `Graph: ${label}`));
  $("graph").replaceChildren(figure);
}

/** A host that reads no resources for the page (no serverResources) still shows the picture a call answered. */
function canRead() {
  const caps = app.getHostCapabilities();
  return Boolean(caps && caps.serverResources);
}

function updated(state) {
  $("state").textContent = state;
  document.body.dataset.refreshed = String(Number(document.body.dataset.refreshed || 0) + 1);
}

function showComponents(components) {
  const list = $("components");
  list.replaceChildren(
    ...components.map((c) => {
      const label = labelOf(c);
      const of = c.dataset && c.dataset !== label ? ` (${c.dataset})` : "";
      return el("li", "", `${KINDS[c.type] || c.type}: ${label}${of}`);
    }),
  );
  if (components.length === 0) list.append(el("li", "empty", "The document is empty."));
}

function showActivity(activity) {
  const list = $("activity");
  list.replaceChildren(
    ...activity.calls.map((call) => {
      const li = el("li", `call ${call.status}`);
      li.append(el("span", "tool", call.title), el("span", "status", call.status));
      if (call.summary) li.append(el("div", "summary", call.summary));
      return li;
    }),
  );
  if (activity.calls.length === 0) list.append(el("li", "empty", "No tool has changed the document yet."));
  $("activity-count").textContent = String(activity.total);
}

async function refreshOnce() {
  const { components } = await readJson("codap://components");
  showComponents(components);
  showActivity(await readJson("codap://activity"));
  await showGraph(components);
}

/** Read the document again; calls during a read make one more read after it, not one each. */
async function refresh() {
  if (running) {
    again = true;
    return running;
  }
  if (!canRead()) {
    updated("This chat app lets the page show only each call's own answer, not read the document.");
    return;
  }
  running = (async () => {
    do {
      again = false;
      try {
        await refreshOnce();
        updated(`Updated ${new Date().toLocaleTimeString()}`);
      } catch (err) {
        $("state").textContent = `Could not read the document: ${err && err.message ? err.message : err}`;
      }
    } while (again);
    running = null;
  })();
  return running;
}

function applyContext(ctx) {
  if (!ctx) return;
  if (ctx.theme) applyDocumentTheme(ctx.theme);
  if (ctx.styles && ctx.styles.variables) applyHostStyleVariables(ctx.styles.variables);
}

app.ontoolinput = ({ arguments: args }) => {
  if (args && args.graph !== undefined) focusGraph = args.graph;
  $("last").textContent = "Running in CODAP…";
};

app.ontoolresult = (result) => {
  const structured = result.structuredContent || {};
  if (structured.graphId !== undefined) focusGraph = structured.graphId;
  const text = (result.content || []).find((c) => c.type === "text");
  $("last").textContent = text ? text.text.split("\n", 1)[0] : "";
  $("last").classList.toggle("error", Boolean(result.isError));
  const picture = (result.content || []).find((c) => c.type === "image");
  if (picture && structured.graphId !== undefined) {
    const label = structured.title || `#${structured.graphId}`;
    showPicture(picture.mimeType, picture.data, structured.graphId, label);
  }
  void refresh();
};

app.ontoolcancelled = ({ reason }) => {
  $("last").textContent = `The call was cancelled${reason ? `: ${reason}` : "."}`;
  void refresh();
};

app.onhostcontextchanged = applyContext;

app.connect().then(() => {
  applyContext(app.getHostContext());
  void refresh();
});

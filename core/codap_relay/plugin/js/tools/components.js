// @ts-check
// Components: tables and text boxes to make; any component (but this plugin) to move, resize, retitle, hide, show
// or close. Sliders and the calculator are sliders.js's, maps maps.js's, where a new one lands component_place.js's.

import { nameMatchers } from "../codap_query.js";
import { ToolError, get, invalid, toolResult } from "./context.js";
import { readDocument, rebuildComponent } from "./codap_document.js";
import { boxOf, freePlace, overlaps, placed } from "./layout.js";
import { textFacts, textValue } from "./markdown.js";
import { textBoxSize } from "./text_fit.js";
import { createMapTools } from "./maps.js";
import { askedPlace, beyondCanvas, beyondCanvasText, createPlacer, placementText, refusalText, registerPlaceBeside, visibleCanvas } from "./component_place.js";
import { plainText } from "./richtext.js";
import { hiddenInItsPlace, tableCardText } from "./table_card.js";
import { createSliderTools } from "./sliders.js";

/**
 * @import {CodapId, CodapRequest} from "../types.js"
 * @import {ToolContext} from "./context.js"
 * @import {Box} from "./layout.js"
 * @import {AskedPlace} from "./component_place.js"
 */

/**
 * A component as componentList lists it, with the title CODAP shows and `get component[id]`'s values.
 * @typedef {{id: CodapId, type: string, name?: string, title: string, hidden?: boolean, detail: Record<string, any>}} Listed
 */

/** The height CODAP gives a minimized component: its title bar (v3 kTitleBarHeight + borders, as it saves it). */
const TITLE_BAR_HEIGHT = 34;

/** @type {Record<string, string>} */
const TYPE_WORDS = {
  caseTable: "case table",
  caseCard: "case card",
  text: "text box",
  slider: "slider",
  map: "map",
  graph: "graph",
  calculator: "calculator",
  game: "plugin",
  webView: "web page",
  guideView: "guide",
  image: "image",
};

/** @param {string | undefined} type */
const typeWord = (type) => TYPE_WORDS[/** @type {string} */ (type)] ?? type ?? "component";
/** @param {{id: CodapId, type?: string, name?: string, title?: string}} c */
const label = (c) => `${JSON.stringify(c.title || c.name || `${typeWord(c.type)} ${c.id}`)} (${typeWord(c.type)}, id ${c.id})`;

/** @param {ToolContext} ctx */
export function createComponentTools(ctx) {
  const { send, must, findDataset } = ctx;
  const placer = createPlacer(ctx);

  /**
   * Every component with the title CODAP shows, and this plugin's own id: two messages.
   * @returns {Promise<{components: Listed[], frameId: CodapId | undefined}>}
   */
  async function listComponents() {
    const frame = get("interactiveFrame");
    const list = get("componentList");
    const [framed, listed] = await send([frame, list]);
    const frameId = must(frame, framed).values?.id;
    /** @type {Array<{id: CodapId, type: string, name?: string, title?: string, hidden?: boolean}>} */
    const listing = must(list, listed).values ?? [];
    const details = await send(listing.map((c) => get(`component[${c.id}]`)));
    const components = listing.map((c, i) => {
      const detail = details[i]?.success === true ? details[i].values ?? {} : {};
      return { ...c, title: detail.title || c.title || detail.dataContext || "", detail };
    });
    return { components, frameId };
  }

  /**
   * The component `wanted` names (id, name or title), or an error naming the components CODAP has.
   * @param {{components: Listed[], frameId: CodapId | undefined}} listed
   * @param {unknown} wanted
   * @param {{allowPlugin?: boolean}} [options] the plugin's own window may be named (to place beside it)
   */
  function pickComponent({ components, frameId }, wanted, { allowPlugin = false } = {}) {
    const key = String(wanted).trim();
    const others = components.filter((c) => c.id !== frameId);
    const available = others.map(label);
    const listing = others.length ? `Components in CODAP: ${available.join(", ")}.` : "CODAP has no components but this plugin.";
    for (const matches of nameMatchers(key)) {
      const found = components.filter(matches);
      if (found.length === 1) {
        if (found[0].id === frameId && !allowPlugin) {
          throw new ToolError(
            `${label(found[0])} is this codap-relay plugin itself: the tools do not move, hide or close it, so the ` +
              `person always sees it. ${listing}`,
            "plugin_protected",
            { component: { id: found[0].id, type: found[0].type }, available },
          );
        }
        return found[0];
      }
      if (found.length > 1) {
        throw new ToolError(
          `${found.length} components are called ${JSON.stringify(key)}: ${found.map(label).join(", ")}. ` +
            "Give the id of the one you mean.",
          "invalid_arguments",
          { available },
        );
      }
    }
    throw new ToolError(`CODAP has no component called ${JSON.stringify(key)}. ${listing}`, "component_not_found", {
      component: key,
      available,
    });
  }

  /**
   * The new component read back: CODAP's own values for it.
   * @param {CodapId} id
   * @returns {Promise<Record<string, any>>}
   */
  async function readBack(id) {
    const read = get(`component[${id}]`);
    const [reply] = await send([read]);
    return must(read, reply, `reading the new component ${id}`).values ?? {};
  }

  /**
   * @param {Record<string, unknown>} values the new component's
   * @param {string} what how a message names it
   */
  async function create(values, what) {
    /** @type {CodapRequest} */
    const request = { action: "create", resource: "component", values };
    const [reply] = await send([request]);
    const id = must(request, reply, `creating ${what}`).values?.id;
    return { id, detail: await readBack(id) };
  }

  /** @param {string | undefined} title */
  const titled = (title) => (title ? { name: title, title } : {});

  /** @param {{datasetName: string, title?: string, asCard?: boolean, place?: string, relativeTo?: string | number}} args */
  async function create_codap_table(args) {
    placer.checkPlace(args);
    const { datasetName, title } = args;
    const asCard = args.asCard === true;
    const dataset = await findDataset(datasetName);
    const type = asCard ? "caseCard" : "caseTable";
    const [before] = await send([get("componentList")]);
    /** @type {Array<{id: CodapId, type?: string, hidden?: boolean}>} */
    const listedBefore = before?.success === true ? before.values ?? [] : [];
    const existing = new Set(listedBefore.map((c) => String(c.id)));
    // CODAP finds the dataset by name or id: the id cannot reach another dataset whose title is this name.
    let { id, detail } = await create({ type, dataContext: String(dataset.id), ...titled(title) }, `a ${typeWord(type)}`);
    if (title && detail.title !== title) {
      // CODAP showed the dataset's existing table, which keeps its title: give it the one asked for.
      /** @type {CodapRequest} */
      const retitle = { action: "update", resource: `component[${id}]`, values: titled(title) };
      const [retitled] = await send([retitle]);
      must(retitle, retitled, `retitling the ${typeWord(type)}`);
      detail = await readBack(id);
    }
    const shownTitle = detail.title || dataset.name;
    const hiddenInstead = await hiddenInItsPlace(ctx, id, listedBefore, String(detail.dataContext ?? dataset.name));
    const { placement, note } = args.place
      ? await placer.placeNew(id, args)
      : { placement: await placer.settle(id, { move: !existing.has(String(id)) }), note: "" };
    const shownType = detail.type ?? type;
    return toolResult(
      `Showing ${JSON.stringify(dataset.name)} in a ${typeWord(shownType)} (id ${id}, title ${JSON.stringify(shownTitle)})` +
        tableCardText(shownType, hiddenInstead) +
        (placement ? placementText(placement) : "") + note,
      {
        componentId: id, type: shownType, datasetName: detail.dataContext ?? dataset.name, title: shownTitle,
        ...(hiddenInstead ? { hiddenInstead: hiddenInstead.id } : {}), ...(placement ? { placement } : {}),
      },
    );
  }

  /**
   * What CODAP did not keep of a text box's text, and what Markdown held that a text box cannot, in words.
   * @param {{document: {children: unknown[]}}} sent
   * @param {unknown} now CODAP's rich text read back
   * @param {string[]} dropped
   */
  function textNotes(sent, now, dropped) {
    const [asked, shown] = [textFacts(sent), textFacts(now)];
    return [
      ...(asked.text.trim() !== shown.text.trim() ? ["the text as given"] : []),
      ...((asked.markdown ?? "") !== (shown.markdown ?? "") ? ["all of its formatting"] : []),
      ...dropped.map((d) => `${d}: left out`),
    ];
  }

  /** @param {{text: string, title?: string, markdown?: boolean, place?: string, relativeTo?: string | number}} args */
  async function create_codap_text(args) {
    placer.checkPlace(args);
    const { text, title } = args;
    // Sent as rich text, never as a string: CODAP reads a string that parses as JSON as rich text.
    const { value, dropped } = textValue(text, args.markdown === true);
    const size = textBoxSize(text, args.markdown === true);
    const dimensions = size.resized ? { dimensions: { width: size.width, height: size.height } } : {};
    const { id, detail } = await create({ type: "text", text: value, ...titled(title), ...dimensions }, "a text box");
    const facts = textFacts(detail.text);
    const notes = textNotes(value, detail.text, dropped);
    const { placement, note } = await placer.placeNew(id, args);
    const sizing = size.scrolls
      ? ` The text is longer than a ${size.width} × ${size.height} px box shows: it scrolls inside it (update_codap_component size makes the box bigger).`
      : size.resized ? ` The box is ${size.width} × ${size.height} px, sized to show the whole text.` : "";
    return toolResult(
      `Created a text box (id ${id}${detail.title ? `, title ${JSON.stringify(detail.title)}` : ""}) showing ` +
        `${facts.text.length} characters${facts.markdown ? ", formatted (structuredContent.markdown reads it back)" : ""}.` +
        sizing + (notes.length ? ` CODAP did not show: ${notes.join("; ")}.` : "") + (placement ? placementText(placement) : "") + note,
      {
        componentId: id,
        title: detail.title ?? "",
        ...facts,
        textScrolls: size.scrolls,
        ...(notes.length ? { notTaken: notes } : {}),
        ...(placement ? { placement } : {}),
      },
    );
  }

  /**
   * Minimizes a component to its title bar, or expands it, as its title bar's button does: CODAP's plugin API has no
   * request for it, so CODAP's saved document is rebuilt with the component's layout changed (the height it had is
   * kept as savedHeight, which is how CODAP saves a minimized component).
   * @param {Listed} target
   * @param {boolean} minimized
   * @param {CodapId | undefined} frameId
   */
  async function minimize(target, minimized, frameId) {
    if (!ctx.listen) throw new ToolError("This plugin cannot read CODAP's document here.", "document_unavailable");
    await rebuildComponent(ctx, target.id, (_storage, doc) => {
      /** @type {Record<string, any> | undefined} */
      const c = (doc.components ?? []).find((x) => String(x.guid) === String(target.id));
      if (!c?.layout) return;
      if (minimized && !c.savedHeight) {
        c.savedHeight = c.layout.height;
        c.layout.height = TITLE_BAR_HEIGHT;
      } else if (!minimized && c.savedHeight) {
        c.layout.height = c.savedHeight;
        delete c.savedHeight;
      }
    }, frameId ?? null);
  }

  /**
   * @param {{component: string | number, title?: string, position?: {left: number, top: number},
   *   size?: {width: number, height: number}, hidden?: boolean, place?: string, relativeTo?: string | number,
   *   text?: string, markdown?: boolean, bringToFront?: boolean, minimized?: boolean}} args
   */
  async function update_codap_component(args) {
    const { component, title, position, size, hidden, place, relativeTo, text: newText, bringToFront, minimized } = args;
    if (args.markdown !== undefined && newText === undefined) throw invalid("markdown says how to read text: give it with text.");
    if (title === undefined && !position && !size && hidden === undefined && place === undefined &&
      newText === undefined && !bringToFront && minimized === undefined) {
      throw invalid("Say what to change: title, position, size, hidden, text, bringToFront, minimized, or place with relativeTo.");
    }
    if ((place === undefined) !== (relativeTo === undefined)) {
      throw invalid("place and relativeTo go together: e.g. place right_of, relativeTo the table's title or id.");
    }
    if (place !== undefined && position) throw invalid("Give position or place, not both.");
    const listed = await listComponents();
    const target = pickComponent(listed, component);
    /** @type {Record<string, unknown>} */
    const values = {
      ...(title !== undefined ? { title } : {}),
      ...(position ? { position } : {}),
      ...(size ? { dimensions: size } : {}),
      ...(hidden !== undefined ? { isVisible: !hidden } : {}),
    };
    const shownOthers = listed.components.filter((c) => c.id !== target.id && !c.hidden);
    /** @type {AskedPlace | null} */
    let placement = null;
    /** @type {Listed | null} */
    let replaced = null;
    /** @type {CodapRequest[]} */
    const extra = [];
    if (place !== undefined) {
      const other = pickComponent(listed, relativeTo, { allowPlugin: true });
      if (other.id === target.id) throw invalid("relativeTo names the component being placed: name another one.");
      const otherBox = boxOf(other.detail);
      const ownBox = boxOf(target.detail);
      if (other.hidden || !otherBox || !ownBox) {
        throw new ToolError(
          `${label(other)} is ${other.hidden ? "hidden" : "not placed on the canvas"}, so nothing can go ${place.replace("_", " ")} it. ` +
            "Show it first (update_codap_component with hidden false), or place it relative to another component.",
          "invalid_arguments",
          { component: other.id },
        );
      }
      const dims = size ?? (place === "instead_of" ? otherBox : ownBox);
      const wanted = placed(place, { width: dims.width, height: dims.height }, otherBox);
      const obstacles = shownOthers.filter((c) => !(place === "instead_of" && c.id === other.id))
        .map((c) => ({ c, box: boxOf(c.detail) }))
        .filter((o) => o.box !== null);
      const box = freePlace(wanted, obstacles.map((o) => /** @type {Box} */ (o.box)));
      const blockers = box.left === wanted.left && box.top === wanted.top
        ? []
        : obstacles.filter((o) => overlaps(wanted, /** @type {Box} */ (o.box))).map((o) => o.c);
      placement = askedPlace(place, other.id, wanted, blockers.map((c) => ({ id: c.id, label: label(c) })));
      values.position = { left: box.left, top: box.top };
      if (place === "instead_of" && !size) values.dimensions = { width: otherBox.width, height: otherBox.height };
      if (place === "instead_of") {
        if (other.id === listed.frameId) {
          throw new ToolError(
            `${label(other)} is this codap-relay plugin itself: it is never hidden, so nothing can take its place. ` +
              "Place the component beside it instead (right_of, below…).",
            "plugin_protected",
            { component: other.id },
          );
        }
        replaced = other;
        extra.push({ action: "update", resource: `component[${other.id}]`, values: { isVisible: false } });
      }
    }
    const resource = `component[${target.id}]`;
    /** @type {ReturnType<typeof textValue> | null} */
    let sentText = null;
    if (newText !== undefined) {
      if (target.type !== "text") throw invalid(`${label(target)} is not a text box: only a text box has text to change.`);
      sentText = textValue(newText, args.markdown === true); // never a string (see create_codap_text)
      values.text = sentText.value;
    }
    if (bringToFront) extra.push({ action: "notify", resource, values: { request: "select" } });
    if (minimized !== undefined) await minimize(target, minimized, listed.frameId);
    /** @type {CodapRequest} */
    const update = { action: "update", resource, values };
    const read = get(resource);
    const list = get("componentList");
    const [updated, ...rest] = await send([update, ...extra, read, list]);
    must(update, updated, `changing ${label(target)}`);
    extra.forEach((r, i) => must(r, rest[i], r.action === "notify" ? `bringing ${label(target)} to the front` : `hiding ${label(/** @type {Listed} */ (replaced))}`));
    const [after, listedNow] = rest.slice(extra.length);
    const now = must(read, after).values ?? {};
    /** @type {Array<{id: CodapId, hidden?: boolean}>} */
    const nowList = must(list, listedNow).values ?? [];
    const isHidden = nowList.find((c) => c.id === target.id)?.hidden === true;
    const finalBox = boxOf(now);
    const covers = finalBox && !isHidden
      ? shownOthers
        .filter((c) => !nowList.find((n) => n.id === c.id)?.hidden)
        .filter((c) => { const b = boxOf(c.detail); return b !== null && overlaps(finalBox, b); })
      : [];
    /** @type {string[]} */
    const notTaken = [];
    const askedPosition = /** @type {{left: number, top: number} | undefined} */ (values.position);
    const askedSize = /** @type {{width: number, height: number} | undefined} */ (values.dimensions);
    if (askedPosition && (now.position?.left !== askedPosition.left || now.position?.top !== askedPosition.top)) {
      notTaken.push(`position (asked left ${askedPosition.left}, top ${askedPosition.top})`);
    }
    if (askedSize && (now.dimensions?.width !== askedSize.width || now.dimensions?.height !== askedSize.height)) {
      notTaken.push(`size (asked ${askedSize.width} × ${askedSize.height} px; CODAP keeps some components within their own limits, a slider's height fixed)`);
    }
    if (title !== undefined && now.title !== title) notTaken.push(`title (asked ${JSON.stringify(title)})`);
    if (hidden !== undefined && isHidden !== hidden) notTaken.push(`hidden ${hidden}`);
    if (sentText) notTaken.push(...textNotes(sentText.value, now.text, sentText.dropped));
    /** @type {boolean | null} */
    let isMinimized = null;
    if (minimized !== undefined) {
      const doc = await readDocument(ctx).catch(() => null);
      const saved = /** @type {Record<string, any> | undefined} */ (doc?.components?.find((c) => String(c.guid) === String(target.id)));
      isMinimized = saved ? saved.savedHeight != null : null;
      if (isMinimized !== minimized) notTaken.push(`minimized ${minimized}`);
    }
    // as the create tools say: a place past the window means the person scrolls the canvas to find it
    const canvas = visibleCanvas();
    const beyond = finalBox && !isHidden ? beyondCanvas(finalBox, canvas) : null;
    const state = {
      componentId: target.id,
      type: now.type ?? target.type,
      title: now.title ?? "",
      position: now.position ?? null,
      size: now.dimensions ?? null,
      hidden: isHidden,
      covers: covers.map((c) => c.id),
      beyondVisibleCanvas: beyond,
      ...(canvas ? { visibleCanvas: canvas } : {}),
      ...(placement ? { placement } : {}),
      ...(replaced ? { hiddenInstead: replaced.id } : {}),
      ...(isMinimized !== null ? { minimized: isMinimized } : {}),
      ...(newText !== undefined ? textFacts(now.text) : {}),
      ...(notTaken.length ? { notTaken } : {}),
    };
    const parts = [
      `title ${JSON.stringify(state.title)}`,
      state.position && `at left ${state.position.left}, top ${state.position.top}`,
      state.size && `${state.size.width} × ${state.size.height} px`,
      isHidden ? "hidden" : "shown",
      isMinimized !== null && (isMinimized ? "minimized to its title bar" : "expanded"),
      bringToFront && "in front of the others",
      newText !== undefined && `showing ${JSON.stringify(plainText(now.text))}${textFacts(now.text).markdown ? " (formatted)" : ""}`,
    ].filter(Boolean);
    let text = `Updated ${typeWord(state.type)} ${target.id}: now ${parts.join(", ")}`;
    if (placement) {
      const other = /** @type {Listed} */ (listed.components.find((c) => c.id === placement?.relativeTo));
      text = `Placed ${label(target)} ${placement.place.replace("_", " ")} ${label(other)}: now ${parts.slice(1).join(", ")}`;
      if (!placement.taken) {
        text += ` (${refusalText(placement.place, "it", placement.wanted, placement.why ?? "")}; this is the nearest free place)`;
      }
    }
    text += covers.length ? `. It covers ${covers.map(label).join(", ")}.` : ". It covers no other component.";
    if (beyond) text += ` ${beyondCanvasText(canvas ?? undefined).replace(/^it/, "It")}.`;
    if (replaced) {
      text += ` ${label(replaced)} is hidden now; it stays in the document (update_codap_component with hidden false shows it again).`;
    }
    if (notTaken.length) text += ` CODAP did not take: ${notTaken.join("; ")}.`;
    return toolResult(text, state);
  }

  /** @param {{component: string | number}} args */
  async function delete_codap_component(args) {
    const target = pickComponent(await listComponents(), args.component);
    /** @type {CodapRequest} */
    const remove = { action: "delete", resource: `component[${target.id}]` };
    const list = get("componentList");
    const [removed, listed] = await send([remove, list]);
    must(remove, removed, `closing ${label(target)}`);
    const left = (must(list, listed).values ?? []).find((/** @type {{id: CodapId}} */ c) => c.id === target.id);
    const outcome = !left ? "closed" : left.hidden ? "hidden" : "still shown";
    const sentence = outcome === "closed"
      ? `Closed ${label(target)}.`
      : outcome === "hidden"
        ? `CODAP hid ${label(target)} rather than closing it (it keeps tables and cards of a dataset); show it again ` +
          "with update_codap_component and hidden false."
        : `CODAP did not close ${label(target)}.`;
    return toolResult(sentence, { componentId: target.id, type: target.type, title: target.title, outcome });
  }

  registerPlaceBeside(ctx, (id, place, relativeTo) => update_codap_component({ component: id, place, relativeTo }));
  return {
    create_codap_table,
    create_codap_text,
    update_codap_component,
    delete_codap_component,
    ...createSliderTools(ctx),
    ...createMapTools(ctx),
  };
}

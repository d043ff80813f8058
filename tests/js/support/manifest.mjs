// The plugin's tool manifest read from its JSON files on disk, as the browser fetches them.

import { readFileSync } from "node:fs";

import { loadManifest } from "../../../core/codap_relay/plugin/js/tools/catalog.js";

const TOOLS_DIR = new URL("../../../core/codap_relay/plugin/js/tools/", import.meta.url);

export const readToolJson = async (name) => JSON.parse(readFileSync(new URL(name, TOOLS_DIR), "utf8"));

export const MANIFEST = await loadManifest(readToolJson);
export const TOOLS = MANIFEST.tools;
export const READ_ONLY_TOOLS = MANIFEST.readOnly;
export const DESTRUCTIVE_TOOLS = MANIFEST.destructive;

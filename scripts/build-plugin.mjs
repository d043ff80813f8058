// Builds the plugin page that the relay serves (core/codap_relay/plugin/dist/) from its sources beside it: the
// modules of js/ bundled into one script, boot.js (the classic script that reports a page that failed to start)
// and styles.css each into one file, all three named by a hash of their content so that a browser may keep them
// for good (http/app.py serves them immutable), and index.html pointing at them. The tool definitions that
// catalog.js fetches file by file at run time are bundled in too: the page loads four files in all.
// Run by scripts/build-plugin; esbuild comes from PLUGIN_BUILD_MODULES (default .tools/mcpapp/node_modules, the
// version mcpapp/package-lock.json pins, which scripts/install-test-deps installs).
import { createHash } from "node:crypto";
import { mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import path from "node:path";
import { fileURLToPath } from "node:url";

const root = path.dirname(path.dirname(fileURLToPath(import.meta.url)));
const modules = path.resolve(process.env.PLUGIN_BUILD_MODULES || path.join(root, ".tools", "mcpapp", "node_modules"));
const esbuild = createRequire(path.join(modules, "noop.js"))("esbuild");
const SOURCES = path.join(root, "core", "codap_relay", "plugin");
const TOOLS = path.join(SOURCES, "js", "tools");
const CATALOG = path.join(TOOLS, "catalog.js");
// What the build writes into its folder; anything else there is left alone, older builds' files are removed.
const BUILT = /^(index\.html|(boot|plugin)-[0-9a-f]{12}\.(js|css))$/;

// Every import of tools/catalog.js gets this module instead: catalog.js itself, whose fetchJson reads the
// definitions from the bundle (a copy each, as a fetch gives) and any other file from the network as before.
const bundledDefinitions = {
  name: "bundled-definitions",
  setup(build) {
    build.onResolve({ filter: /(^|\/)catalog\.js$/ }, (args) => {
      if (args.namespace === "bundled-definitions") return undefined; // the shim's own import: the real file
      const resolved = path.resolve(args.resolveDir, args.path);
      return resolved === CATALOG ? { path: CATALOG, namespace: "bundled-definitions" } : undefined;
    });
    build.onLoad({ filter: /.*/, namespace: "bundled-definitions" }, () => {
      const { families } = JSON.parse(readFileSync(path.join(TOOLS, "catalog.json"), "utf8"));
      const files = ["catalog.json", ...families.map((family) => `${family}.json`)];
      const contents = [
        'import * as original from "./catalog.js";',
        ...files.map((file, i) => `import file${i} from ${JSON.stringify(`./${file}`)};`),
        'export * from "./catalog.js";',
        `const FILES = new Map([${files.map((file, i) => `[${JSON.stringify(file)}, file${i}]`).join(", ")}]);`,
        "export async function fetchJson(name) {",
        "  return FILES.has(name) ? structuredClone(FILES.get(name)) : original.fetchJson(name);",
        "}",
        "export function loadManifest(readJson = fetchJson) {",
        "  return original.loadManifest(readJson);",
        "}",
      ].join("\n");
      return { contents, loader: "js", resolveDir: TOOLS, watchFiles: files.map((file) => path.join(TOOLS, file)) };
    });
  },
};

// tsconfigRaw: the build reads no tsconfig.json; the checkout's is the type check's, and its "strict" would change
// the bundles ("use strict" added).
const COMMON = {
  bundle: true,
  minify: true,
  target: "es2022",
  legalComments: "none",
  write: false,
  logLevel: "warning",
  tsconfigRaw: {},
};

async function build(entry, options) {
  const built = await esbuild.build({ ...COMMON, entryPoints: [path.join(SOURCES, entry)], ...options });
  return built.outputFiles[0].contents;
}

function hashed(name, extension, contents) {
  return [`${name}-${createHash("sha256").update(contents).digest("hex").slice(0, 12)}.${extension}`, contents];
}

// The page's three references to its sources, each replaced by its built file's name; the build fails if one of
// them is no longer in index.html as written here (the page would load a file the relay no longer serves).
function page(files) {
  let html = readFileSync(path.join(SOURCES, "index.html"), "utf8");
  const references = [
    ['<link rel="stylesheet" href="styles.css">', `<link rel="stylesheet" href="${files.css}">`],
    ['<script src="js/boot.js"></script>', `<script src="${files.boot}"></script>`],
    ['<script type="module" src="js/main.js"></script>', `<script type="module" src="${files.plugin}"></script>`],
  ];
  for (const [source, built] of references) {
    if (html.split(source).length !== 2) throw new Error(`index.html: expected ${source} once`);
    html = html.replace(source, () => built);
  }
  const note = "<!-- Built by scripts/build-plugin from core/codap_relay/plugin/index.html: edit that file. -->\n";
  return html.replace(/^<!doctype html>\n/i, (doctype) => doctype + note);
}

const outputs = [
  hashed("boot", "js", await build("js/boot.js", { format: "iife", platform: "browser" })),
  hashed("plugin", "js", await build("js/main.js", { format: "esm", platform: "browser", plugins: [bundledDefinitions] })),
  hashed("plugin", "css", await build("styles.css", { loader: { ".css": "css" } })),
];
const [boot, plugin, css] = outputs.map(([name]) => name);
outputs.push(["index.html", Buffer.from(page({ boot, plugin, css }), "utf8")]);

// Argument: the folder to write (default core/codap_relay/plugin/dist; the test that the committed files are
// this build's writes to another).
const out = path.resolve(process.argv[2] || path.join(SOURCES, "dist"));
mkdirSync(out, { recursive: true });
for (const name of readdirSync(out)) if (BUILT.test(name)) rmSync(path.join(out, name));
for (const [name, contents] of outputs) writeFileSync(path.join(out, name), contents);

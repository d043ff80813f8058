// Builds the relay's MCP App into one self-contained HTML file (the view's script bundled with ext-apps' App
// class and inlined: the host's sandbox lets the page load nothing its CSP does not declare), or the tests' host
// page. Run by scripts/build-mcp-app; the modules come from MCPAPP_MODULES (default
// .tools/mcpapp/node_modules, which scripts/install-test-deps installs from package-lock.json here).
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import path from "node:path";
import { fileURLToPath } from "node:url";

const here = path.dirname(fileURLToPath(import.meta.url));
const root = path.dirname(here);
const modules = path.resolve(process.env.MCPAPP_MODULES || path.join(root, ".tools", "mcpapp", "node_modules"));
const esbuild = createRequire(path.join(modules, "noop.js"))("esbuild");
const OUTPUT = path.join(root, "core", "codap_relay", "mcp", "app", "document.html");

// zod exports every language's error messages as z.locales, which a namespace import keeps whole (about 300 KB of
// the bundle); the view and the host use none of them (zod sets English itself, from locales/en.js).
const englishOnly = {
  name: "zod-english-only",
  setup(build) {
    build.onResolve({ filter: /^\.\.\/locales\/index\.js$/ }, (args) =>
      args.importer.includes(`${path.sep}zod${path.sep}`) ? { path: "zod-locales", namespace: "english-only" } : undefined,
    );
    build.onLoad({ filter: /.*/, namespace: "english-only" }, () => ({
      contents: `export { default as en } from ${JSON.stringify(path.join(modules, "zod", "v4", "locales", "en.js"))};`,
      resolveDir: modules,
    }));
  },
};

async function bundle(entry) {
  const built = await esbuild.build({
    entryPoints: [path.join(here, "src", entry)],
    bundle: true,
    minify: true,
    format: "iife",
    target: "es2022",
    platform: "browser",
    legalComments: "none",
    nodePaths: [modules],
    plugins: [englishOnly],
    // Not the checkout's tsconfig.json (the plugin's type check): its "strict" would add "use strict" here.
    tsconfigRaw: {},
    write: false,
    logLevel: "warning",
  });
  // Inlined in <script>: no "</script" may end the element early.
  return built.outputFiles[0].text.replaceAll("</script", "<\\/script");
}

function page(template, script) {
  return readFileSync(path.join(here, "src", template), "utf8").replace("/*VIEW*/", () => script);
}

// No argument: write the app to OUTPUT. --stdout: print it instead (the test that the committed file is the
// build's). --host DIR: build only the tests' host page into DIR.
const [mode, dir] = process.argv.slice(2);
if (mode === "--host") {
  mkdirSync(dir, { recursive: true });
  writeFileSync(path.join(dir, "host.js"), await bundle("host.js"));
  writeFileSync(
    path.join(dir, "index.html"),
    '<!doctype html><html lang="en"><head><meta charset="utf-8"><title>MCP Apps test host</title></head>' +
      '<body><main id="apps"></main><script src="host.js"></script></body></html>',
  );
} else {
  const html = page("view.html", await bundle("view.js"));
  if (mode === "--stdout") process.stdout.write(html);
  else writeFileSync(OUTPUT, html);
}

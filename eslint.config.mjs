// ESLint for the plugin's JavaScript (a browser page of ES modules), its Node tests and the browser tests' pages.
// mcpapp/ is a project of its own (its own package.json and build).
// @eslint/js's recommended rules plus a few that catch real bugs; no style rules (formatting is left as it is).
import js from "@eslint/js";
import globals from "globals";

export default [
  { ignores: ["**/*", "!core/", "!core/codap_relay/", "!core/codap_relay/plugin/", "!core/codap_relay/plugin/**",
      "!tests/", "!tests/js/", "!tests/js/**", "!tests/e2e/", "!tests/e2e/**", "!eslint.config.mjs"] },
  // The bundle scripts/build-plugin writes from the sources linted here.
  { ignores: ["core/codap_relay/plugin/dist/"] },
  js.configs.recommended,
  {
    linterOptions: { reportUnusedDisableDirectives: "error" },
    rules: {
      // Bugs, not style: == where === was meant (== null stays: it means null or undefined), values never used, a
      // loop whose condition never changes, a callback of map/filter that forgets to return, a string thrown...
      eqeqeq: ["error", "always", { null: "ignore" }],
      "no-unused-vars": ["error", { args: "none", caughtErrors: "none", ignoreRestSiblings: true }],
      // Only a use the module or function reaches before the declaration runs (a TDZ error), not one inside a later call.
      "no-use-before-define": ["error", { functions: false, classes: false, variables: false }],
      "no-self-compare": "error",
      "no-template-curly-in-string": "error",
      "no-unmodified-loop-condition": "error",
      "no-unreachable-loop": "error",
      "no-constructor-return": "error",
      "array-callback-return": "error",
      "no-throw-literal": "error",
      "prefer-promise-reject-errors": "error",
      "no-implicit-coercion": ["error", { boolean: false }],
    },
  },
  {
    files: ["core/codap_relay/plugin/**/*.js", "tests/e2e/**/*.js"],
    languageOptions: { sourceType: "module", globals: { ...globals.browser } },
  },
  {
    files: ["tests/**/*.mjs", "eslint.config.mjs"],
    languageOptions: { sourceType: "module", globals: { ...globals.node, ...globals.browser } },
  },
];

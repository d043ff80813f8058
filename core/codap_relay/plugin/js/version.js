// @ts-check
// The plugin's version, which it reports (get_codap_status, the trace file, registration). The relay's own is
// codap_relay.__version__; tests/unit/test_plugin_js.py keeps the two equal.
export const VERSION = "1.0.0";

// Reads one codap_api request a line (JSON) on stdin and writes what the plugin's policy would send for it, a
// line each: {"sent": request} (text rebuilt) or {"refused": rule or error code}. tests/fuzz/test_policy_properties.py
// drives it with generated values.
import { createInterface } from "node:readline";

import { reviewRequest } from "../../../core/codap_relay/plugin/js/tools/policy.js";

for await (const line of createInterface({ input: process.stdin })) {
  let out;
  try {
    const reviewed = reviewRequest(JSON.parse(line));
    out = reviewed.refusal ? { refused: reviewed.refusal.rule.id } : { sent: reviewed.request };
  } catch (err) {
    out = { crashed: String(err?.stack ?? err) };
  }
  process.stdout.write(`${JSON.stringify(out)}\n`);
}

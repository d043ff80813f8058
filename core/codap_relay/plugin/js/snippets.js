// @ts-check
// The text behind each copy button: what each kind of LLM needs to reach this CODAP session.

/**
 * @param {string} relayBase
 * @param {string} code
 */
export function mcpUrl(relayBase, code) {
  return `${relayBase}/mcp/${code}`;
}

/** Claude Desktop speaks stdio; the mcp-remote bridge connects it to a remote Streamable HTTP endpoint. */
/**
 * @param {string} relayBase
 * @param {string} code
 */
export function claudeDesktopConfig(relayBase, code) {
  const config = {
    mcpServers: {
      codap: { command: "npx", args: ["-y", "mcp-remote", mcpUrl(relayBase, code)] },
    },
  };
  return JSON.stringify(config, null, 2);
}

/** A prompt to paste into an LLM that can make HTTP requests (a "fetch"/"http" tool). */
/**
 * @param {string} relayBase
 * @param {string} code
 */
export function httpPrompt(relayBase, code) {
  return [
    "You can control the CODAP data tool in my browser through a relay.",
    `Pairing code: ${code}`,
    `Read your instructions first: GET ${relayBase}/llms.txt?code=${code}`,
    `The tools and their JSON schemas: GET ${relayBase}/metadata?code=${code}`,
    `To call a tool: POST ${relayBase}/request?wait=15 with JSON {"code": "${code}", "tool": "<name>", "args": {…}}.`,
    `If the answer is still pending (status 202), poll GET ${relayBase}/response?code=${code}&id=<id>&wait=15.`,
    "Start by calling get_codap_status, then tell me what you see.",
  ].join("\n");
}

// A minimal MCP Apps host for the tests: ext-apps' AppBridge renders a view in a sandboxed frame (scripts only, an
// opaque origin) under the CSP its resource declares, and hands the view's resources/read to window.relayMcp,
// which the test wires to a real MCP client of the relay.
import { AppBridge, PostMessageTransport } from "@modelcontextprotocol/ext-apps/app-bridge";

/** The CSP a host builds from the resource's _meta.ui.csp (the extension's defaults where a list is empty). */
function policy(csp) {
  const list = (key) => (csp && csp[key] && csp[key].length ? csp[key].join(" ") : "");
  const resources = list("resourceDomains");
  return [
    "default-src 'none'",
    `script-src 'unsafe-inline' ${resources}`,
    `style-src 'unsafe-inline' ${resources}`,
    `img-src data: ${resources}`,
    `font-src ${resources || "'none'"}`,
    `connect-src ${list("connectDomains") || "'none'"}`,
    `frame-src ${list("frameDomains") || "'none'"}`,
    "object-src 'none'",
    "base-uri 'none'",
  ].join("; ");
}

window.startHost = async ({ html, csp, capabilities = { serverResources: {} } }) => {
  const meta = `<meta http-equiv="Content-Security-Policy" content="${policy(csp)}">`;
  const iframe = document.createElement("iframe");
  iframe.setAttribute("sandbox", "allow-scripts");
  iframe.title = "MCP App";
  iframe.style.cssText = "width: 640px; height: 200px; border: 1px solid #ccc";
  iframe.srcdoc = html.replace("<head>", () => `<head>${meta}`);
  document.getElementById("apps").append(iframe);
  const bridge = new AppBridge(
    null,
    { name: "codap-relay test host", version: "1.0.0" },
    capabilities,
    { hostContext: { theme: "light", displayMode: "inline", platform: "web" } },
  );
  bridge.onreadresource = (params) => window.relayMcp("resources/read", params);
  bridge.onsizechange = ({ height }) => {
    if (height) iframe.style.height = `${height}px`;
  };
  const initialized = new Promise((resolve) => {
    bridge.oninitialized = resolve;
  });
  await bridge.connect(new PostMessageTransport(iframe.contentWindow, iframe.contentWindow));
  await initialized;
  window.bridge = bridge;
  window.appFrame = iframe;
  return policy(csp);
};

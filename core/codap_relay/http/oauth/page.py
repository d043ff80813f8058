"""The consent page's HTML: the form for the code, the wait with its number, and the ends.

Never framed (clickjacking), no referrer, not cached; its one style and one script by hash, nothing else may run or
load, and its form posts only here. The wait never reloads itself (a page that moves under a screen reader): a
script asks the relay each second, a polite live region says what happened, and the page goes on by itself once
the plugin answered; without scripts, a link asks again.
"""

from __future__ import annotations

import base64
import hashlib
import html
from typing import Any

from starlette.responses import HTMLResponse

from ...oauth import consent
from ...oauth.redirects import is_loopback_http

TITLE = "Connect an app to CODAP"
STYLE = (
    "body{font:16px/1.5 system-ui,sans-serif;max-width:34em;margin:2em auto;padding:0 1em;color:#1a1a1a}"
    "h1{font-size:1.4em}label{display:block;font-weight:600;margin:1em 0 .3em}"
    "input{font:inherit;font-size:1.4em;letter-spacing:.15em;text-transform:uppercase;padding:.3em;width:10em}"
    "button{font:inherit;margin-top:1em;padding:.4em 1.2em}.error{color:#a00000;font-weight:600}"
    ".app{font-weight:700}.small{color:#444;font-size:.9em}.warn{color:#7a4b00}"
    ".number{font-size:3em;font-weight:700;letter-spacing:.2em;margin:.2em 0}"
)
# Asks the relay each second whether the plugin answered (the same URL, as JSON), says so in the live region and
# goes on: the relay then redirects to the app. Static: the pending authorization is the page's own URL.
SCRIPT = (
    "(()=>{const s=document.getElementById('status');const u=location.href;"
    "const look=async()=>{try{const r=await fetch(u,{headers:{Accept:'application/json'},cache:'no-store',"
    "credentials:'same-origin'});const a=await r.json();if(a.state!=='waiting'){s.textContent=a.state==="
    "'answered'?'The plugin answered. Taking you back to the app.':'This approval has ended.';"
    "location.replace(u);return}}catch(e){s.textContent='The relay did not answer; asking again.'}"
    "setTimeout(look,1000)};setTimeout(look,1000)})();"
)


def _hash(text: str) -> str:
    return base64.b64encode(hashlib.sha256(text.encode()).digest()).decode()


PAGE_CSP = (
    f"default-src 'none'; style-src 'sha256-{_hash(STYLE)}'; script-src 'sha256-{_hash(SCRIPT)}'; "
    "connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'"
)
PAGE_HEADERS = {"Content-Security-Policy": PAGE_CSP, "X-Frame-Options": "DENY", "Cache-Control": "no-store"}
GONE = "This approval link has expired or was already used. Start again from your app (connect it again)."


def page(body: str, *, status: int = 200, script: bool = False) -> HTMLResponse:
    code = f"<script>{SCRIPT}</script>" if script else ""
    text = (
        f'<!doctype html><html lang="en"><head><meta charset="utf-8"><title>{TITLE}</title>'
        f'<meta name="viewport" content="width=device-width, initial-scale=1"><style>{STYLE}</style></head>'
        f"<body><main><h1>{TITLE}</h1>{body}</main>{code}</body></html>"
    )
    return HTMLResponse(text, status_code=status, headers=PAGE_HEADERS)


def message(text: str, *, status: int) -> HTMLResponse:
    return page(f'<p class="error" role="alert">{html.escape(text)}</p>', status=status)


def about_app(pending: dict[str, Any]) -> str:
    """Who asks, and what the relay can prove of it: the host its metadata document is published at, or nothing."""
    app = html.escape(str(pending["client_name"]))
    redirect = str(pending["redirect_uri"])
    where = html.escape(consent.app_host(redirect))
    verified = pending.get("verified")
    proof = (
        f"Verified: its registration is published at {html.escape(str(verified))}."
        if verified
        else "Unverified: this app registered itself with this relay, so its name is its own say."
    )
    local = (
        f'<p class="warn">It returns to a program on this computer ({where}): any program here could be it.</p>'
        if is_loopback_http(redirect)
        else ""
    )
    return (
        f'<p><span class="app">{app}</span> (returning to {where}) asks to use a CODAP document.</p>'
        f'<p class="small">{proof}</p>{local}'
    )


def code_form(request_id: str, pending: dict[str, Any], error: str | None) -> str:
    said = f'<p class="error" role="alert">{html.escape(error)}</p>' if error else ""
    return (
        f"{about_app(pending)}"
        "<p>Open CODAP with the codap-relay plugin and type the pairing code the plugin shows. This page then "
        "shows a number to type in the plugin.</p>"
        f'{said}<form method="post" action="consent">'
        f'<input type="hidden" name="request" value="{html.escape(request_id)}">'
        f'<input type="hidden" name="csrf" value="{html.escape(str(pending["csrf"]))}">'
        '<label for="code">Pairing code</label>'
        '<input id="code" name="code" autocomplete="off" autocapitalize="characters" spellcheck="false" '
        'maxlength="12" required placeholder="ABCD-2345" autofocus>'
        '<br><button type="submit">Continue</button></form>'
        '<p class="small">Nothing is shared until you type the number in the plugin and press Allow there.</p>'
    )


def waiting(request_id: str, pending: dict[str, Any]) -> str:
    number = html.escape(str(pending["number"]))
    again = html.escape(f"consent?request={request_id}")
    return (
        f"{about_app(pending)}"
        f'<p class="number"><span class="small">Your number:</span> <strong id="number">{number}</strong></p>'
        f"<p>In the codap-relay plugin in CODAP, type {number} and press <strong>Allow</strong>. Only type a "
        "number this page shows you: never one that someone else gives you.</p>"
        '<p id="status" role="status" aria-live="polite">Waiting for your answer in the plugin.</p>'
        f'<noscript><p><a href="{again}">See whether the plugin answered</a></p></noscript>'
    )

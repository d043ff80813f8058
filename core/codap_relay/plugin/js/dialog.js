// @ts-check
// A modal <dialog> that keyboard users cannot leave by accident: Tab and Shift+Tab cycle inside it (inside an
// iframe the browser would otherwise move focus out to CODAP's page), and Escape means "cancel".

const FOCUSABLE = "button, [href], input, select, textarea, [tabindex]:not([tabindex='-1'])";

/** @param {HTMLElement} root */
function focusables(root) {
  return /** @type {HTMLElement[]} */ ([...root.querySelectorAll(FOCUSABLE)]).filter(
    (el) => !(/** @type {any} */ (el).disabled) && el.getClientRects().length > 0,
  );
}

/**
 * @param {HTMLDialogElement} dialog
 * @param {() => void} onCancel called on Escape (and if the browser closes the dialog by itself)
 */
export function guardDialog(dialog, onCancel) {
  dialog.addEventListener("keydown", (event) => {
    if (event.key !== "Tab") return;
    const items = focusables(dialog);
    if (!items.length) return;
    const first = items[0];
    const last = items[items.length - 1];
    const active = dialog.ownerDocument.activeElement;
    const outside = !dialog.contains(active);
    if (event.shiftKey && (active === first || outside)) {
      event.preventDefault();
      last.focus();
    } else if (!event.shiftKey && (active === last || outside)) {
      event.preventDefault();
      first.focus();
    }
  });
  dialog.addEventListener("cancel", (event) => {
    event.preventDefault(); // closed by the answer, so that focus goes back where it belongs
    onCancel();
  });
  // Escape pressed twice without a click in between closes a dialog without a cancelable event in Chromium.
  dialog.addEventListener("close", () => {
    if (dialog.dataset.open === "yes") onCancel();
  });
}

/** @param {HTMLDialogElement} dialog @param {HTMLElement} initial the control focused first */
export function openDialog(dialog, initial) {
  if (!dialog.open) {
    dialog.dataset.open = "yes";
    dialog.showModal();
  }
  initial.focus();
}

/** @param {HTMLDialogElement} dialog @param {HTMLElement[]} returnTo the first of these that can take focus gets it */
export function closeDialog(dialog, returnTo) {
  if (dialog.dataset.open !== "yes") return;
  dialog.dataset.open = "no";
  if (dialog.open) dialog.close();
  for (const el of returnTo) {
    if (!(/** @type {any} */ (el).disabled) && !el.hidden && el.getClientRects().length > 0) {
      el.focus();
      return;
    }
  }
}

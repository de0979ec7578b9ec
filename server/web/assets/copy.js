// Copy buttons: <button data-copy="ID" data-copied="STATUS-ID" hidden> copies the text of element ID.
// The button stays hidden without script; the text itself is plain, selectable text either way.
'use strict';

function selectText(element) {
  const range = document.createRange();
  range.selectNodeContents(element);
  const selection = window.getSelection();
  selection.removeAllRanges();
  selection.addRange(range);
}

async function copyText(element) {
  const text = element.textContent.trim();
  // The Clipboard API needs a secure context (https or localhost); elsewhere fall back to the selection.
  if (navigator.clipboard && window.isSecureContext) {
    try {
      await navigator.clipboard.writeText(text);
      return true;
    } catch {
      // Refused (no permission, document not focused): try the selection below.
    }
  }
  selectText(element);
  try {
    return document.execCommand('copy');
  } catch {
    return false;
  }
}

for (const button of document.querySelectorAll('button[data-copy]')) {
  const source = document.getElementById(button.dataset.copy);
  if (!source) continue;
  const status = button.dataset.copied ? document.getElementById(button.dataset.copied) : null;
  button.hidden = false;
  button.addEventListener('click', async () => {
    const copied = await copyText(source);
    if (status)
      status.textContent = copied ? 'Copied.' : 'Could not copy: the key is selected, press Ctrl+C.';
    if (!copied) selectText(source);
  });
}

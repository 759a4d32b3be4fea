// Airlock's approval page: the WebAuthn ceremonies a passkey needs, and
// nothing else. Served by Airlock itself at /approvals/passkey.js, the one
// script its pages' Content-Security-Policy allows.
//
// A button with `data-get` (options for navigator.credentials.get) and/or
// `data-create` (options for .create) runs the ceremonies when pressed,
// puts the browser's answers in the form's hidden fields and sends the
// form; the server checks everything (this script is only the browser's
// half of the ceremony).
"use strict";

(() => {
  const decode = (text) => {
    const base64 = text.replace(/-/g, "+").replace(/_/g, "/");
    return Uint8Array.from(atob(base64 + "===".slice((base64.length + 3) % 4)), (c) => c.charCodeAt(0));
  };
  const encode = (buffer) =>
    btoa(String.fromCharCode(...new Uint8Array(buffer))).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");
  const ids = (list) => (list || []).map((item) => ({ ...item, id: decode(item.id) }));

  const assertion = async (options) => {
    const publicKey = { ...options, challenge: decode(options.challenge), allowCredentials: ids(options.allowCredentials) };
    const credential = await navigator.credentials.get({ publicKey });
    const response = credential.response;
    return JSON.stringify({
      id: credential.id,
      rawId: encode(credential.rawId),
      type: credential.type,
      response: {
        authenticatorData: encode(response.authenticatorData),
        clientDataJSON: encode(response.clientDataJSON),
        signature: encode(response.signature),
        userHandle: response.userHandle ? encode(response.userHandle) : null,
      },
      extensions: credential.getClientExtensionResults(),
    });
  };

  const registration = async (options) => {
    const publicKey = {
      ...options,
      challenge: decode(options.challenge),
      user: { ...options.user, id: decode(options.user.id) },
      excludeCredentials: ids(options.excludeCredentials),
    };
    const credential = await navigator.credentials.create({ publicKey });
    const response = credential.response;
    return JSON.stringify({
      id: credential.id,
      rawId: encode(credential.rawId),
      type: credential.type,
      response: {
        attestationObject: encode(response.attestationObject),
        clientDataJSON: encode(response.clientDataJSON),
        transports: response.getTransports ? response.getTransports() : undefined,
      },
      extensions: credential.getClientExtensionResults(),
    });
  };

  const field = (form, name, value) => {
    const input = form.querySelector(`input[name="${name}"]`);
    if (input) input.value = value;
  };

  const say = (text) => {
    const note = document.getElementById("passkey-note");
    if (note) {
      note.textContent = text;
      note.hidden = false;
    }
  };

  for (const button of document.querySelectorAll("button[data-get], button[data-create]")) {
    button.addEventListener("click", async (event) => {
      event.preventDefault();
      const form = button.form;
      for (const other of form.querySelectorAll("button")) other.disabled = true;
      try {
        if (!window.PublicKeyCredential) throw new Error("this browser has no passkeys");
        field(form, "decision", button.value || "");
        if (button.dataset.get) {
          field(form, "state", button.dataset.state || "");
          field(form, "credential", await assertion(JSON.parse(button.dataset.get)));
        }
        if (button.dataset.create) {
          field(form, "registration", await registration(JSON.parse(button.dataset.create)));
        }
        form.submit();
      } catch (error) {
        say(`No passkey answered (${error.name || "Error"}: ${error.message}). Nothing was sent; try again.`);
        for (const other of form.querySelectorAll("button")) other.disabled = false;
      }
    });
  }
})();

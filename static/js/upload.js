/* A form that uploads a file (data-busy="Uploading…") says so while the upload runs: its submit
 * button is disabled and a status line shows the file's size and, where the browser reports it,
 * that the page is waiting for the server. The form is submitted as usual (without JavaScript it
 * works the same, only without the status line). */
(function () {
  "use strict";

  function sizeText(bytes) {
    if (bytes >= 1048576) return (bytes / 1048576).toFixed(1) + " MB";
    if (bytes >= 1024) return Math.round(bytes / 1024) + " KB";
    return bytes + " bytes";
  }

  document.querySelectorAll("form[data-busy]").forEach((form) => {
    const status = form.querySelector(".busy-status");
    form.addEventListener("submit", () => {
      const button = form.querySelector("button[type=submit]");
      const files = Array.from(form.querySelectorAll("input[type=file]"))
        .flatMap((input) => Array.from(input.files || []));
      const bytes = files.reduce((sum, file) => sum + file.size, 0);
      // Disabled after the form's data is taken, so the submission itself is not affected.
      setTimeout(() => { if (button) button.disabled = true; }, 0);
      form.setAttribute("aria-busy", "true");
      if (status) {
        status.textContent = `${form.dataset.busy} ${bytes ? sizeText(bytes) + " " : ""}— the page changes when the import has finished.`;
        status.hidden = false;
      }
    });
    // Back to the page from the browser's cache: ready again.
    window.addEventListener("pageshow", () => {
      const button = form.querySelector("button[type=submit]");
      if (button) button.disabled = false;
      form.removeAttribute("aria-busy");
      if (status) status.hidden = true;
    });
  });
})();

/* A small Markdown renderer for questionnaire item fields: headings, paragraphs, bullet and
 * numbered lists, **bold**, *italic* and `code`, built with textContent only, so nothing in a
 * dataset can become HTML or script. */
(function () {
  "use strict";

  const ITEM = /^\s*([-*+]|\d+[.)])\s+/;
  const HEADING = /^(#{1,6})\s+/;
  const INLINE = /\*\*(.+?)\*\*|`([^`]+)`|\*(\S(?:.*?\S)?)\*/g;

  function inline(parent, text) {
    let last = 0;
    for (const match of text.matchAll(INLINE)) {
      if (match.index > last) parent.appendChild(document.createTextNode(text.slice(last, match.index)));
      const tag = match[1] !== undefined ? "strong" : match[2] !== undefined ? "code" : "em";
      const node = document.createElement(tag);
      node.textContent = match[1] ?? match[2] ?? match[3];
      parent.appendChild(node);
      last = match.index + match[0].length;
    }
    if (last < text.length) parent.appendChild(document.createTextNode(text.slice(last)));
  }

  function render(box, text) {
    box.replaceChildren();
    let list = null;
    let paragraph = null;
    for (const line of String(text).split(/\r?\n/)) {
      if (!line.trim()) { list = null; paragraph = null; continue; }
      const item = line.match(ITEM);
      if (item) {
        const ordered = /\d/.test(item[1]);
        if (!list || list.tagName !== (ordered ? "OL" : "UL")) {
          list = document.createElement(ordered ? "ol" : "ul");
          box.appendChild(list);
        }
        const li = document.createElement("li");
        inline(li, line.slice(item[0].length));
        list.appendChild(li);
        paragraph = null;
        continue;
      }
      list = null;
      const heading = line.match(HEADING);
      if (heading) {
        const p = document.createElement("p");
        const strong = document.createElement("strong");
        inline(strong, line.slice(heading[0].length));
        p.appendChild(strong);
        box.appendChild(p);
        paragraph = null;
        continue;
      }
      if (!paragraph) {
        paragraph = document.createElement("p");
        box.appendChild(paragraph);
      } else {
        paragraph.appendChild(document.createTextNode(" "));
      }
      inline(paragraph, line.trim());
    }
  }

  window.ConcordQuestionnaireMarkdown = { render };
})();

/* The LLM responses of claim review are Markdown. This renders the common part of it (headings,
 * paragraphs, bullet and numbered lists, **bold**, *italic*, `code`) into DOM nodes made with
 * textContent only, so nothing in a response can become HTML or script; LaTeX stays as text.
 * Every text node keeps its place in the raw response, so a claim's source span [start, end)
 * is still highlighted (a <mark>) in the rendered text. */
(function () {
  "use strict";

  const ITEM = /^\s*([-*+]|\d+[.)])\s+/;
  const HEADING = /^(#{1,6})\s+/;
  const INLINE = /\*\*(.+?)\*\*|`([^`]+)`|\*(\S(?:.*?\S)?)\*/g;

  function make(tag, className, text) {
    const node = document.createElement(tag);
    if (className) node.className = className;
    if (text !== undefined) node.textContent = text;
    return node;
  }

  function render(box, text, span) {
    box.replaceChildren();
    const lines = [];
    let at = 0;
    for (const line of text.split("\n")) { lines.push({ text: line, start: at, end: at + line.length }); at += line.length + 1; }

    // Raw text [s, e) as text nodes, the part inside the source span wrapped in a <mark>.
    function piece(parent, s, e) {
      if (e <= s) return;
      if (!span || span[1] <= s || span[0] >= e) { parent.appendChild(document.createTextNode(text.slice(s, e))); return; }
      const a = Math.max(s, span[0]), b = Math.min(e, span[1]);
      if (a > s) parent.appendChild(document.createTextNode(text.slice(s, a)));
      parent.appendChild(make("mark", "rv-source-mark", text.slice(a, b)));
      if (e > b) parent.appendChild(document.createTextNode(text.slice(b, e)));
    }

    function inline(parent, start, end) {
      const segment = text.slice(start, end);
      let last = 0;
      INLINE.lastIndex = 0;
      for (let m = INLINE.exec(segment); m; m = INLINE.exec(segment)) {
        piece(parent, start + last, start + m.index);
        const inner = m[1] !== undefined ? m[1] : m[2] !== undefined ? m[2] : m[3];
        const node = make(m[1] !== undefined ? "strong" : m[2] !== undefined ? "code" : "em");
        const from = start + m.index + m[0].indexOf(inner);
        piece(node, from, from + inner.length);
        parent.appendChild(node);
        last = m.index + m[0].length;
      }
      piece(parent, start + last, end);
    }

    let i = 0;
    while (i < lines.length) {
      const line = lines[i];
      if (!line.text.trim()) { i += 1; continue; }
      const heading = HEADING.exec(line.text);
      if (heading) {
        const h = make("p", "rv-md-heading");
        inline(h, line.start + heading[0].length, line.end);
        box.appendChild(h);
        i += 1;
        continue;
      }
      const first = ITEM.exec(line.text);
      if (first) {
        const list = make(/\d/.test(first[1]) ? "ol" : "ul", "rv-md-list");
        for (let m = first; i < lines.length && m; m = i < lines.length ? ITEM.exec(lines[i].text) : null) {
          const li = make("li");
          inline(li, lines[i].start + m[0].length, lines[i].end);
          list.appendChild(li);
          i += 1;
        }
        box.appendChild(list);
        continue;
      }
      const p = make("p", "rv-md-p");
      let started = false;
      while (i < lines.length && lines[i].text.trim() && !ITEM.exec(lines[i].text) && !HEADING.exec(lines[i].text)) {
        if (started) p.appendChild(document.createElement("br"));
        inline(p, lines[i].start, lines[i].end);
        started = true;
        i += 1;
      }
      box.appendChild(p);
    }
  }

  window.ConcordMarkdown = { render };
})();

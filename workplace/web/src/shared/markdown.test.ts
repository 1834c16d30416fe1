import { describe, expect, it } from "vitest";
import { renderToStaticMarkup } from "react-dom/server";
import { createElement } from "react";
import { Markdown, ResultView, parseMarkdown } from "./markdown";

const html = (el: Parameters<typeof renderToStaticMarkup>[0]) => renderToStaticMarkup(el);

describe("a Result's Markdown renders as what it is", () => {
  it("a table as a table, lists as lists, headings under the page's own", () => {
    const blocks = parseMarkdown("## Costs: report outline\n\nIntro line\n\n| Section | What it covers |\n|---|---|\n| Overview | Scope |\n\n- one\n- two\n\n1. **first**\n2. second");
    expect(blocks.map((b) => b.kind)).toEqual(["heading", "paragraph", "table", "list", "list"]);
    const out = html(createElement(Markdown, { text: "## Title\n\n| A | B |\n|---|---|\n| 1 | 2 |\n\n- **x** and `y`" }));
    expect(out).toContain("<h4>Title</h4>");
    expect(out).toContain('<th scope="col">A</th>');
    expect(out).toContain("<td>2</td>");
    expect(out).toContain("<li><strong>x</strong> and <code>y</code></li>");
  });

  it("an indented line under a list item continues the item, as a wrapped README writes it", () => {
    const blocks = parseMarkdown("- first item\n  wraps here;\n- second\n\nAfter.");
    expect(blocks).toEqual([
      { kind: "list", ordered: false, items: ["first item wraps here;", "second"] },
      { kind: "paragraph", text: "After." },
    ]);
  });

  it("raw HTML stays text and no link is made", () => {
    const out = html(createElement(Markdown, { text: '<img src=x onerror="alert(1)"> [click](javascript:alert(1))' }));
    expect(out).not.toContain("<img");
    expect(out).not.toContain("<a");
    expect(out).toContain("&lt;img");
  });

  it("structured output without text is a table or named values, never JSON", () => {
    const table = html(createElement(ResultView, { output: [{ region: "north", total: 3 }, { region: "west", total: 5 }] }));
    expect(table).toContain('<th scope="col">region</th>');
    expect(table).toContain("<td>west</td>");
    const values = html(createElement(ResultView, { output: { approved: true, level: "detailed" } }));
    expect(values).toContain("<dd>yes</dd>");
    expect(values).not.toContain('{"');
  });
});

// Renders Markdown as KFP's UI does (frontend/src/components/viewers/MarkdownViewer.tsx:
// markdown-to-jsx with disableParsingRawHTML), to static HTML: stdin in, stdout out.
import { readFileSync } from "node:fs";
import { createElement } from "react";
import { renderToStaticMarkup } from "react-dom/server";
import Markdown from "markdown-to-jsx";

const text = readFileSync(0, "utf8");
const options = { disableParsingRawHTML: true };
process.stdout.write(renderToStaticMarkup(createElement(Markdown, { options }, text)));

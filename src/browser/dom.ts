/** Attributes of an element; `text` is its text (never markup), `className` its class. */
export type Props = Record<string, string | number | null | undefined>;

/** An element whose every value goes in as text or an attribute, never as markup. */
export function el<K extends keyof HTMLElementTagNameMap>(
  tag: K,
  props: Props = {},
  ...children: (Node | string | null | undefined | false)[]
): HTMLElementTagNameMap[K] {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(props)) {
    if (value === undefined || value === null) continue;
    if (key === 'text') node.textContent = String(value);
    else if (key === 'className' || key === 'class') node.className = String(value);
    else node.setAttribute(key, String(value));
  }
  for (const child of children) if (child) node.append(child);
  return node;
}

/** The element with this id; the pages hold every id they ask for. */
export function byId<T extends HTMLElement = HTMLElement>(id: string): T {
  return document.getElementById(id) as T;
}

/** JSON the page carries in a `<script type="application/json">` element. */
export function jsonIn<T>(id: string): T {
  return JSON.parse(byId(id).textContent ?? 'null') as T;
}

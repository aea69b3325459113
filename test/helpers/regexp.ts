/** `text` as a regular expression matching it literally (a path: its dots, slashes and the rest). */
export const literally = (text: string): string => text.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&');

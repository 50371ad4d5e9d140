/** The lines (1-based) where a doc comment begins right below the end of another. */
export declare function stackedDocComments(text: string): number[];

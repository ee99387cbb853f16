/** Where the generated module is written. */
export const OUT: string;
/** The generated module's text for shared-word.wat as it is now. */
export function render(): Promise<string>;

/**
 * CHANGELOG.md as Keep a Changelog 1.1.0 writes it: `## [Unreleased]` on top, then one
 * `## [X.Y.Z] - YYYY-MM-DD` section a release, newest first.
 */

export interface ChangelogSection {
  version: string;
  date: string;
  /** The section's text between its heading and the next section's, trimmed. */
  body: string;
}

const HEADING = /^## \[([^\]]+)\](?: - (\d{4}-\d{2}-\d{2}))?\s*$/;

/** The released sections, newest first (`[Unreleased]` left out); throws on a heading of another form. */
export function changelogSections(text: string): ChangelogSection[] {
  const sections: ChangelogSection[] = [];
  let current: { version: string; date: string; lines: string[] } | undefined;
  const close = (): void => {
    if (current !== undefined && current.version !== 'Unreleased') {
      sections.push({ version: current.version, date: current.date, body: current.lines.join('\n').trim() });
    }
  };
  for (const line of text.split('\n')) {
    if (line.startsWith('## ')) {
      const m = HEADING.exec(line);
      if (m === null) throw new Error(`CHANGELOG.md: "${line}" is not "## [X.Y.Z] - YYYY-MM-DD" or "## [Unreleased]"`);
      if (m[1] !== 'Unreleased' && m[2] === undefined) throw new Error(`CHANGELOG.md: "${line}" has no date`);
      close();
      current = { version: m[1]!, date: m[2] ?? '', lines: [] };
    } else if (/^\[[^\]]+\]: /.test(line)) {
      // The link references at the end belong to no section.
      close();
      current = undefined;
    } else current?.lines.push(line);
  }
  close();
  return sections;
}

/** The version of the newest released section. */
export function newestChangelogVersion(text: string): string | undefined {
  return changelogSections(text)[0]?.version;
}

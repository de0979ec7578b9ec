import type { Store } from '../store/store.ts';
import { PRESETS, type ScenarioPreset } from './presets.ts';

/** A scenario as the sandbox service sees it: which twins it seeds, and with what. */
export interface Scenario {
  id: string;
  name: string;
  twins: string[];
  seed: Record<string, unknown>;
}

/**
 * Finds the scenarios a caller may use: the presets shipped with Twinbox and the caller's own saved
 * scenarios. Another account's scenario is treated as absent.
 */
export class ScenarioDirectory {
  constructor(
    private readonly store: Store,
    readonly presets: readonly ScenarioPreset[] = PRESETS,
  ) {}

  async findVisible(accountId: string, id: string): Promise<Scenario | undefined> {
    const preset = this.presets.find((candidate) => candidate.id === id);
    if (preset) return preset;
    const saved = await this.store.scenarios.get(id);
    return saved && saved.owner_id === accountId ? saved : undefined;
  }
}

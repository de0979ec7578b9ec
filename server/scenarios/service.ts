import { randomBytes } from 'node:crypto';
import type { Store } from '../store/store.ts';
import type { AccountRecord, ScenarioRecord } from '../store/records.ts';
import type { TwinCatalog } from '../twins/catalog.ts';
import { badRequest, notFound } from '../errors.ts';
import type { ScenarioDirectory } from './directory.ts';
import type { ScenarioPreset } from './presets.ts';
import { planFromPrompt } from './planner.ts';
import { validateSeedDocument } from './seeds.ts';

export interface ScenarioView {
  id: string;
  kind: 'preset' | 'saved';
  name: string;
  description: string | null;
  twins: string[];
  seed: Record<string, unknown>;
  /** Presets: the counts they promise per twin. */
  promises: Record<string, Record<string, number>> | null;
  /** Saved from a prompt: what the planner could not interpret. */
  notes: string[];
  created_at: string | null;
}

export interface CreateScenarioInput {
  name: string;
  twins?: string[];
  seed?: Record<string, unknown>;
  prompt?: string;
}

/** Saved scenarios of one account, and the presets everyone sees. */
export class ScenarioService {
  constructor(
    private readonly store: Store,
    private readonly catalog: TwinCatalog,
    private readonly directory: ScenarioDirectory,
  ) {}

  async list(account: AccountRecord): Promise<ScenarioView[]> {
    const saved = (await this.store.scenarios.findBy('owner_id', account.id)).sort((a, b) =>
      a.created_at.localeCompare(b.created_at),
    );
    return [...this.directory.presets.map(presetView), ...saved.map(savedView)];
  }

  async get(account: AccountRecord, id: string): Promise<ScenarioView> {
    const preset = this.directory.presets.find((p) => p.id === id);
    if (preset) return presetView(preset);
    return savedView(await this.owned(account, id));
  }

  /** Saves a seed document, or the seed the planner makes of a prompt, validated like any seed. */
  async create(account: AccountRecord, input: CreateScenarioInput): Promise<ScenarioView> {
    if (Boolean(input.seed) === Boolean(input.prompt)) {
      throw badRequest(
        'Give either "seed" (a seed document) or "prompt" (to be planned), not both or neither.',
      );
    }
    let seed = input.seed ?? {};
    let notes: string[] = [];
    if (input.prompt) {
      const plan = planFromPrompt(input.prompt);
      if (plan.twins.length === 0) throw badRequest(plan.notes.join(' '), 'prompt_not_understood');
      ({ seed, notes } = plan);
    }
    const twins = input.twins ?? Object.keys(seed);
    const unknown = twins.filter((name) => !this.catalog.has(name));
    if (unknown.length) throw badRequest(`Unknown twin names: ${unknown.join(', ')}.`, 'unknown_twin');
    const record: ScenarioRecord = {
      id: `scn_${randomBytes(12).toString('hex')}`,
      owner_id: account.id,
      name: input.name,
      twins,
      seed: validateSeedDocument(seed, twins),
      notes,
      created_at: new Date().toISOString(),
    };
    await this.store.scenarios.insert(record);
    return savedView(record);
  }

  async delete(account: AccountRecord, id: string): Promise<void> {
    if (this.directory.presets.some((p) => p.id === id)) {
      throw badRequest(
        `${id} is a preset shipped with Twinbox; presets cannot be deleted.`,
        'preset_read_only',
      );
    }
    await this.owned(account, id);
    await this.store.scenarios.delete(id);
  }

  private async owned(account: AccountRecord, id: string): Promise<ScenarioRecord> {
    const record = await this.store.scenarios.get(id);
    if (!record || record.owner_id !== account.id)
      throw notFound(`No scenario ${id} in your account or the presets.`);
    return record;
  }
}

function presetView(preset: ScenarioPreset): ScenarioView {
  return {
    id: preset.id,
    kind: 'preset',
    name: preset.name,
    description: preset.description,
    twins: preset.twins,
    seed: preset.seed,
    promises: preset.promises,
    notes: [],
    created_at: null,
  };
}

function savedView(record: ScenarioRecord): ScenarioView {
  return {
    id: record.id,
    kind: 'saved',
    name: record.name,
    description: null,
    twins: record.twins,
    seed: record.seed,
    promises: null,
    notes: record.notes ?? [],
    created_at: record.created_at,
  };
}

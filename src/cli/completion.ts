import type { Command, Option } from 'commander';
import { commandPath } from './help.js';

/**
 * Shell completion scripts, generated from the command table itself (commander has none of its
 * own): a command or option added to the table is completed without a change here. Each script
 * completes commands, then options (after `-`), then file names, and file names after an option
 * that takes a value.
 */
export const SHELLS = ['bash', 'zsh', 'fish'] as const;
export type Shell = (typeof SHELLS)[number];

interface Node { path: string; commands: readonly Command[]; options: readonly Option[]; cmd: Command }

function nodes(program: Command): Node[] {
  const out: Node[] = [];
  // The program's own options (--quiet, --no-color) are taken after any command too.
  const global = program.options.filter((o) => o.long !== '--version');
  const walk = (c: Command) => {
    const options = c === program ? c.options : [...c.options, ...global];
    out.push({ path: commandPath(c), commands: c.commands.filter((s) => !(s as unknown as { _hidden?: boolean })._hidden), options, cmd: c });
    c.commands.forEach(walk);
  };
  walk(program);
  return out;
}

const flagsOf = (o: Option) => [o.long, o.short].filter((x): x is string => !!x);
const takesValue = (o: Option) => o.required || o.optional;

export function completionScript(program: Command, shell: Shell): string {
  if (shell === 'fish') return fish(program);
  const bash = bashScript(program);
  if (shell === 'bash') return bash;
  // zsh runs bash completion functions through bashcompinit: one script, the same behaviour.
  return `# edgeplane completion for zsh: \`source <(edgeplane completion zsh)\` in ~/.zshrc (after compinit)\nautoload -U +X bashcompinit && bashcompinit\n${bash.replace(/^#.*\n/, '')}`;
}

function bashScript(program: Command): string {
  const all = nodes(program);
  const q = (s: string) => s.replace(/'/g, `'\\''`);
  const cases = (pick: (n: Node) => string[]) => all.map((n) => `    '${q(n.path)}') echo '${q(pick(n).join(' '))}' ;;`).join('\n');
  const valued = [...new Set(all.flatMap((n) => n.options.filter(takesValue).flatMap(flagsOf)))];
  // Options and arguments with a fixed set of values (`.choices()`) complete those, not file names.
  const choices = new Map<string, string[]>();
  for (const o of all.flatMap((n) => n.options)) if (o.argChoices) for (const f of flagsOf(o)) choices.set(f, o.argChoices);
  const valueCases = [...choices].map(([f, c]) => `    '${q(f)}') echo '${q(c.join(' '))}' ;;`).join('\n');
  const argumentCases = cases((n) => n.commands.length ? [] : n.cmd.registeredArguments[0]?.argChoices ?? []);
  return `# edgeplane completion for bash: \`source <(edgeplane completion bash)\`, in ~/.bashrc to keep it
_edgeplane_commands() {
  case "$1" in
${cases((n) => n.commands.map((c) => c.name()))}
  esac
}
_edgeplane_options() {
  case "$1" in
${cases((n) => [...n.options.flatMap(flagsOf), '--help'])}
  esac
}
_edgeplane_values() {
  case "$1" in
${valueCases}
  esac
}
_edgeplane_arguments() {
  case "$1" in
${argumentCases}
  esac
}
_edgeplane_files() {
  # One file name a line: names with spaces stay whole.
  local IFS=$'\\n'
  COMPREPLY=($(compgen -f -- "$1")); { type compopt >/dev/null 2>&1 && compopt -o filenames 2>/dev/null; } || true
}
_edgeplane() {
  local cur="\${COMP_WORDS[COMP_CWORD]}" prev="" path="" word i
  [ "$COMP_CWORD" -gt 0 ] && prev="\${COMP_WORDS[COMP_CWORD-1]}"
  for ((i = 1; i < COMP_CWORD; i++)); do
    word="\${COMP_WORDS[i]}"
    case " $(_edgeplane_commands "$path") " in
      *" $word "*) path="\${path:+$path }$word" ;;
    esac
  done
  COMPREPLY=()
  if [ -n "$(_edgeplane_values "$prev")" ]; then
    COMPREPLY=($(compgen -W "$(_edgeplane_values "$prev")" -- "$cur")); return 0
  fi
  case " ${valued.join(' ')} " in
    *" $prev "*) _edgeplane_files "$cur"; return 0 ;;
  esac
  if [[ "$cur" == -* ]]; then
    COMPREPLY=($(compgen -W "$(_edgeplane_options "$path")" -- "$cur"))
  elif [ -n "$(_edgeplane_commands "$path")" ]; then
    COMPREPLY=($(compgen -W "$(_edgeplane_commands "$path")" -- "$cur"))
  elif [ -n "$(_edgeplane_arguments "$path")" ]; then
    COMPREPLY=($(compgen -W "$(_edgeplane_arguments "$path")" -- "$cur"))
  else
    _edgeplane_files "$cur"
  fi
  return 0
}
complete -F _edgeplane edgeplane
`;
}

function fish(program: Command): string {
  const all = nodes(program);
  const q = (s: string) => `'${s.replace(/\\/g, '\\\\').replace(/'/g, "\\'")}'`;
  const lines = ['# edgeplane completion for fish: `edgeplane completion fish > ~/.config/fish/completions/edgeplane.fish`', 'complete -c edgeplane -f'];
  // A command is current when its whole path was typed and none of its subcommands yet.
  const at = (n: Node) => {
    const words = n.path ? n.path.split(' ') : [];
    const seen = words.map((w) => `__fish_seen_subcommand_from ${w}`);
    const below = n.commands.map((c) => c.name());
    const parts = words.length ? seen : ['__fish_use_subcommand'];
    if (words.length && below.length) parts.push(`not __fish_seen_subcommand_from ${below.join(' ')}`);
    return parts.join('; and ');
  };
  for (const n of all) {
    for (const c of n.commands) lines.push(`complete -c edgeplane -n ${q(at(n))} -a ${c.name()} -d ${q(c.description())}`);
    for (const o of n.options) {
      const flags = [o.long ? `-l ${o.long.replace(/^--/, '')}` : '', o.short ? `-s ${o.short.replace(/^-/, '')}` : ''].filter(Boolean).join(' ');
      const value = !takesValue(o) ? '' : o.argChoices ? ` -x -a ${q(o.argChoices.join(' '))}` : ' -r -F';
      lines.push(`complete -c edgeplane -n ${q(at(n))} ${flags}${value} -d ${q(o.description)}`);
    }
    // Commands that take a directory or file get file names.
    const argChoices = n.cmd.registeredArguments[0]?.argChoices;
    if (!n.commands.length && argChoices) lines.push(`complete -c edgeplane -n ${q(at(n))} -a ${q(argChoices.join(' '))}`);
    else if (!n.commands.length && n.cmd.registeredArguments.length) lines.push(`complete -c edgeplane -n ${q(at(n))} -F`);
  }
  return lines.join('\n') + '\n';
}

# agent-host shell integration for zsh: your own .zshrc first, then OSC 633 marks for each
# command (A prompt start, B prompt end, E the command line, C executed, D;<exit code> finished,
# P;Cwd=<directory>); the host removes them from the output. Each mark ends with this terminal's
# nonce (read from AHP_TERMINAL_NONCE by our .zshenv and kept unexported): a mark printed by
# anything else is not believed.
ZDOTDIR=${AHP_USER_ZDOTDIR:-$HOME}
unset AHP_USER_ZDOTDIR
[[ -r $ZDOTDIR/.zshrc ]] && source "$ZDOTDIR/.zshrc"

__ahp_escape() {
    local text=${1//\\/\\\\}
    text=${text//;/\\x3b}
    text=${text//$'\n'/\\x0a}
    text=${text//$'\r'/\\x0d}
    print -rn -- "$text"
}
__ahp_preexec() { print -rn -- $'\e]633;E;'"$(__ahp_escape "$1");$__ahp_nonce"$'\a\e]633;C;'"$__ahp_nonce"$'\a' }
__ahp_precmd() {
    local ahp_status=$?
    print -rn -- $'\e]633;D;'"$ahp_status;$__ahp_nonce"$'\a\e]633;P;Cwd='"$(__ahp_escape "$PWD");$__ahp_nonce"$'\a\e]633;A;'"$__ahp_nonce"$'\a'
    return $ahp_status
}
autoload -Uz add-zsh-hook
add-zsh-hook preexec __ahp_preexec
# First, so it sees the command's exit status before any other hook changes it.
precmd_functions=(__ahp_precmd ${precmd_functions:#__ahp_precmd})
PS1="${PS1}"$'%{\e]633;B;'"$__ahp_nonce"$'\a%}'

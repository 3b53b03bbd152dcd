#!/usr/bin/env python3
"""By-hand fidelity check of the reference's chat harnesses (not a test: it reads files outside the
repository). With the reference's own texts (extracted literals, prompt files, tool schemas) laid
out as a prompts directory in a temporary folder, and the reference preset (`opencode.history =
"reference"`, `opencode.tools = "reference"`), `harness-proxy rewrite --harness NAME` must
reproduce the test vectors of the harnesses spec (outside the repository) for pi (its section
3.5), qwen-code (4.4, the folder listing aside: the proxy never lists the client's disk), kimi-code
(5.5), kimi-cli (6.4), deepseek-tui (7.6), minimal (8) and little-coder (9).

    scripts/check-harness-reference.py REFERENCE_HARNESSES_DIR [BINARY]

REFERENCE_HARNESSES_DIR holds the reference's texts (pi.md, qwen-code.md, qwen_code_prompt.md,
kimi_code_system_prompt.md, deepseek_tui_prompts/, ...); it is kept outside the repository. The
texts are copied only into a temporary directory, never into the project.
"""
import json, os, re, subprocess, sys, tempfile

if len(sys.argv) not in (2, 3):
    sys.exit(__doc__)
R = os.path.join(os.path.abspath(sys.argv[1]), '')
BIN = sys.argv[2] if len(sys.argv) == 3 else os.path.join(os.path.dirname(__file__), '..', 'target', 'debug', 'harness-proxy')
P = os.path.join(tempfile.mkdtemp(prefix='harness-reference-'), '')
FAILED = []
def sections(path):
    t=open(path).read()
    out={}
    for m in re.finditer(r'## (.*?)\n\n<<<\n(.*?)\n>>>', t, re.S):
        out[m.group(1)]=m.group(2)
    return out
pi=sections(R+'pi.md')
key=[k for k in pi if k.startswith('build_system_prompt')][0]
tmpl=pi[key].replace('{{','\x00').replace('}}','\x01')
tmpl=tmpl.replace('{date}','{{date}}').replace('{cwd}','{{cwd}}').replace('\x00','{').replace('\x01','}')
os.makedirs(P+'pi',exist_ok=True)
open(P+'pi/system.md','w').write(tmpl+'\n')
tools=[]
for name in ['read','bash','edit','write']:
    d=pi[f'tool `{name}`: description']
    p=json.loads(pi[f'tool `{name}`: parameters (json! macro source, verbatim; serialised compactly in this key order)'])
    tools.append({"type":"function","function":{"name":name,"description":d,"parameters":p,"strict":False}})
json.dump(tools,open(P+'pi/tools.json','w'))
req={"model":"S","messages":[{"role":"user","content":"List files"},{"role":"assistant","content":None,"tool_calls":[{"id":"c1","type":"function","function":{"name":"bash","arguments":"{\"command\":\"ls\",\"extra\":1}"}}]},{"role":"tool","tool_call_id":"c1","content":"a.txt\n"},{"role":"assistant","content":"Done."}],
 "tools":[{"type":"function","function":{"name":"bash","parameters":{"type":"object","properties":{"command":{"type":"string"},"timeout":{"type":"number"}},"required":["command"]}}}]}
env=dict(os.environ, HARNESS_PROXY__OPENCODE__HISTORY='reference', HARNESS_PROXY__OPENCODE__TOOLS='reference', HARNESS_PROXY__OPENCODE__TODAY='Sat Nov 29 2025')
out=subprocess.run([BIN,'rewrite','--harness','pi','--prompts-dir',P,'--header','x-harness-cwd: /home/user/project','--header','x-harness-client: pi'],input=json.dumps(req),capture_output=True,text=True,env=env)
if out.returncode: print(out.stderr); sys.exit(1)
body=json.loads(out.stdout.splitlines()[0])
system=tmpl.replace('{{date}}','2025-11-29').replace('{{cwd}}','/home/user/project')
expected=[{"role":"system","content":system},
 {"role":"user","content":[{"type":"text","text":"List files"}]},
 {"role":"assistant","content":None,"reasoning_content":"","tool_calls":[{"id":"c1","type":"function","function":{"name":"bash","arguments":"{\"command\":\"ls\"}"}}]},
 {"role":"tool","content":"a.txt\n","tool_call_id":"c1"},
 {"role":"assistant","content":"Done.","reasoning_content":""}]
print('pi section 3.5', 'OK' if body['messages']==expected else 'MISMATCH\n'+json.dumps(body['messages'],indent=1)[:3000])
if body['messages']!=expected: FAILED.append('pi')
print('keys', list(body.keys()))
exp_keys=["model","messages","stream","stream_options","store","tools","thinking","reasoning_effort"]
print('key order match' if list(body.keys())==exp_keys else 'KEY MISMATCH')
print('tools match' if body['tools']==tools else 'TOOLS MISMATCH '+json.dumps(body['tools'])[:500])
print('serialised tools byte-equal' if json.dumps(body['tools'],separators=(',',':'))==json.dumps(tools,separators=(',',':')) else 'tools bytes differ')
def sections(path):
    t=open(path).read()
    return {m.group(1):m.group(2) for m in re.finditer(r'## (.*?)\n\n<<<\n(.*?)\n>>>', t, re.S)}
def rust_fmt(t, names):
    t=t.replace('{{','\x00').replace('}}','\x01')
    for n in names: t=t.replace('{'+n+'}','{{'+n+'}}')
    return t.replace('\x00','{').replace('\x01','}')
def w(path,text):
    os.makedirs(os.path.dirname(P+path),exist_ok=True); open(P+path,'w').write(text)
def rewrite(h,req,headers=(),extra_env={}):
    env=dict(os.environ, HARNESS_PROXY__OPENCODE__HISTORY='reference', HARNESS_PROXY__OPENCODE__TOOLS='reference', HARNESS_PROXY__OPENCODE__TODAY='Sat Nov 29 2025', HARNESS_PROXY__OPENCODE__PLATFORM='linux', **extra_env)
    args=[BIN,'rewrite','--harness',h,'--prompts-dir',P]
    for hd in headers: args+=['--header',hd]
    out=subprocess.run(args,input=json.dumps(req),capture_output=True,text=True,env=env)
    if out.returncode: print(h,'FAILED',out.stderr); return None
    return json.loads(out.stdout.splitlines()[0])
def check(name, got, want):
    if got != want: FAILED.append(name)
    print(name, 'OK' if got==want else 'MISMATCH\n got  '+json.dumps(got)[:1500]+'\n want '+json.dumps(want)[:1500])
# qwen-code section 4.4
q=sections(R+'qwen-code.md')
qsys=open(R+'qwen_code_prompt.md').read().rstrip('\n')
w('qwen-code/system.md', qsys.replace('{{','{{{{').replace('}}','}}}}')+'\n')
setup=[v for k,v in q.items() if k.startswith('startup context')][0]
w('qwen-code/setup.md', rust_fmt(setup,['today','operating_system','cwd_display','folder_listing'])+'\n')
w('qwen-code/setup_reply.md', q['synthetic assistant reply']+'\n')
b=rewrite('qwen-code',{"model":"S","messages":[{"role":"user","content":"hi"}]},['x-harness-cwd: /w'])
listing='/w/'  # the proxy cannot list the client's disk: the cwd line alone (documented)
want=[{"role":"system","content":qsys},{"role":"user","content":[{"type":"text","text":rust_fmt(setup,[]).replace('{today}','Saturday, November 29, 2025').replace('{operating_system}','linux').replace('{cwd_display}','/w').replace('{folder_listing}',listing)}]},{"role":"assistant","content":q['synthetic assistant reply']},{"role":"user","content":"hi"}]
check('qwen-code section 4.4 (listing: cwd line only)', b['messages'], want)
check('qwen-code keys', list(b.keys()), ["model","messages","max_tokens","stream","stream_options","tools"])
# minimal section 8
m=sections(R+'minimal.md')['MINIMAL_SYSTEM_PROMPT']
w('minimal/system.md', m+'\n')
b=rewrite('minimal',{"model":"S","messages":[{"role":"user","content":"hi"}]})
check('minimal section 8', b['messages'], [{"role":"system","content":m},{"role":"user","content":"hi"}])
# little-coder section 9
lc=sections(R+'little-coder.md')
lsys=open(R+'little_coder_system_prompt.md').read()
w('little-coder/system.md', lsys.replace('{{','{{{{').replace('}}','}}}}'))
rw=lc['READ_WRITE_TOOL_GUIDANCE']; br=lc['BROWSER_RESEARCH_TOOL_GUIDANCE']
w('little-coder/read_write_guidance.md', rw.replace('{{','{{{{').replace('}}','}}}}')+'\n')
w('little-coder/browser_guidance.md', br.replace('{{','{{{{').replace('}}','}}}}')+'\n')
b=rewrite('little-coder',{"model":"S","messages":[{"role":"user","content":"fix tests"}]})
want_sys=lsys.rstrip()+"\n\nCurrent date: 2025-11-29\nCurrent working directory: .\n\n"+rw+"\n"
check('little-coder section 9', b['messages'], [{"role":"system","content":want_sys},{"role":"user","content":[{"type":"text","text":"fix tests"}]}])
# deepseek-tui section 7.6 skeleton
D=R+'deepseek_tui_prompts/'
ds=sections(R+'deepseek-tui.md')
w('deepseek-tui/base.md', rust_fmt(open(D+'base.md').read(),['model_id']))
w('deepseek-tui/personality.md', open(D+'personalities/calm.md').read())
w('deepseek-tui/mode.md', open(D+'modes/yolo.md').read())
w('deepseek-tui/approvals.md', open(D+'approvals/auto.md').read())
env=ds['environment block (format template; {} = platform)'].replace('{CODEWHALE_VERSION}','0.8.44').replace('{}','{{platform}}').replace('{shell}','{{shell}}').replace('{pwd}','{{pwd}}')
w('deepseek-tui/environment.md', env+'\n')
cm=[v for k,v in ds.items() if k.startswith('context_management')][0]
w('deepseek-tui/context_management.md', cm+'\n')
w('deepseek-tui/compact.md', open(D+'compact.md').read())
ar=[v for k,v in ds.items() if k.startswith('authority_recap')][0]
w('deepseek-tui/authority.md', ar+'\n')
w('deepseek-tui/turn_meta_hint.md', ds['turn_meta guidance line']+'\n')
b=rewrite('deepseek-tui',{"model":"deepseek-chat","messages":[{"role":"user","content":"fix the bug"}]})
secs=[rust_fmt(open(D+'base.md').read(),[]).replace('{model_id}','deepseek-chat'), open(D+'personalities/calm.md').read(), open(D+'modes/yolo.md').read(), open(D+'approvals/auto.md').read(), env.replace('{{platform}}','linux').replace('{{shell}}','/bin/zsh').replace('{{pwd}}','.'), cm, open(D+'compact.md').read(), ar]
want_sys='\n\n'.join(s.rstrip() for s in secs)
check('deepseek-tui section 7.6 skeleton', b['messages'], [{"role":"system","content":want_sys},{"role":"user","content":"<turn_meta>\nCurrent local date: 2025-11-29\n</turn_meta>\nfix the bug"}])
check('deepseek-tui keys', list(b.keys()), ["model","messages","max_tokens","stream","stream_options","tools","tool_choice"])
# kimi-code section 5.5 skeleton
k=sections(R+'kimi-code.md')
t=open(R+'kimi_code_system_prompt.md').read()
win=[v for kk,v in k.items() if kk.startswith('Windows block')][0]
add=[v for kk,v in k.items() if kk.startswith('Additional-directories block')][0]
assert win in t and add in t
t=t.replace(win,'').replace(add,'').replace('{% if KIMI_SKILLS %}\n','\n').replace('{% endif %}\n','\n')
w('kimi-code/system.md', t if t.endswith('\n') else t+'\n')
skills=[v for kk,v in k.items() if kk.startswith('KIMI_CODE_BUILTIN_SKILLS')][0]
w('kimi-code/skills.md', skills+'\n')
rem=k['KIMI_CODE_AUTO_PERMISSION_REMINDER']
w('kimi-code/reminder.md', rem+'\n')
b=rewrite('kimi-code',{"model":"S","messages":[{"role":"user","content":"hi"}]},['x-conversation-id: T1'])
import re as _re
sysw=_re.sub(r'\{\{\s*(\w+)\s*\}\}', lambda mm: {'ROLE_ADDITIONAL':'','KIMI_OS':'Linux','KIMI_SHELL':'bash (`/bin/bash`)','KIMI_NOW':'2025-11-29T00:00:00.000Z','KIMI_WORK_DIR':'.','KIMI_WORK_DIR_LS':'','KIMI_ADDITIONAL_DIRS_INFO':'','KIMI_AGENTS_MD':'','KIMI_SKILLS':skills}[mm.group(1)], t)
sysw=sysw[:-1] if sysw.endswith('\n') else sysw
check('kimi-code section 5.5 skeleton', b['messages'], [{"role":"system","content":sysw},{"role":"user","content":"hi"},{"role":"user","content":rem}])
check('kimi-code keys', list(b.keys()), ["model","messages","max_completion_tokens","prompt_cache_key","stream","stream_options","tools","thinking"])
print('kimi-code fields', b['max_completion_tokens'], b['prompt_cache_key'], b['thinking'])
# kimi-cli section 6.4 skeleton
kc=sections(R+'kimi-cli.md')
t=open(R+'kimi_cli_prompt.md').read()
t=re.sub(r'\{% if KIMI_OS == "Windows" %\}.*?\{% endif %\}\n', '', t, flags=re.S)
t=re.sub(r'\{% if KIMI_ADDITIONAL_DIRS_INFO %\}.*?\{% endif %\}\n?', '', t, flags=re.S)
assert '{%' not in t, t[t.find('{%')-50:t.find('{%')+80]
t=t.replace('{{','{{{{').replace('}}','}}}}')
t=re.sub(r'\$\{(\w+)\}', r'{{\1}}', t)
w('kimi-cli/system.md', t if t.endswith('\n') else t+'\n')
sk=[v for kk,v in kc.items() if kk.startswith('builtin_kimi_skill_listing')][0]
w('kimi-cli/skills.md', sk+'\n')
req={"model":"S","messages":[{"role":"user","content":"fix bug\n"},{"role":"assistant","content":None,"reasoning_content":"r","tool_calls":[{"id":"c1","type":"function","function":{"name":"Shell","arguments":"{\"command\": \"ls\"}"}}]},{"role":"tool","tool_call_id":"c1","content":"ok"}],"tools":[{"type":"function","function":{"name":"Shell","parameters":{"type":"object","properties":{"command":{"type":"string"}},"required":["command"]}}}]}
b=rewrite('kimi-cli',req,['x-harness-client: kimi-cli'])
check('kimi-cli section 6.4 skeleton (after the system)', b['messages'][1:], [{"role":"user","content":"fix bug"},{"role":"assistant","tool_calls":[{"type":"function","id":"c1","function":{"name":"Shell","arguments":"{\"command\": \"ls\"}"}}],"reasoning_content":"r"},{"role":"tool","content":"ok","tool_call_id":"c1"}])
s=b['messages'][0]['content']
print('kimi-cli system: starts', json.dumps(s[:80]), '| has no ${ or {{:', '${' not in s and '{{' not in s, '| ends', json.dumps(s[-60:]))
print('kimi-cli keys', list(b.keys()))

if FAILED:
    sys.exit('differ: ' + ', '.join(FAILED))
print('every vector reproduced')
